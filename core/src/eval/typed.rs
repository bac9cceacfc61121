//! Typed programs: the scalar part of rule conditions, evaluated without the
//! interpreter's generic machinery (issue 36).
//!
//! cel-interpreter walks a generic tree over dynamic values. Every `resource.x` looks
//! `resource` up through the scopes by name and then `x` in a 37-entry map, which was
//! built for the resource before its first rule ran; every intermediate value is a
//! [`Cel`] that is cloned and dropped. Yet most `when` and `assert` expressions of the
//! built-in pack are comparisons and logic over scalar fields of `resource` and of
//! `sku(resource.sku)`. When an expression is decoded, [`compile`] turns that part of it
//! into a [`Program`]: fields become direct reads of the [`Resource`] and of the SKU
//! answer, literals become scalars, operators keep the interpreter's exact semantics
//! (truthiness for `!`, `&&`, `||` and `?:`, numeric equality across `int`, `uint` and
//! `double`, comparisons that fail between other kinds).
//!
//! The interpreter stays the reference. A program answers only with a bool reached
//! without anything it does not compile (a function call, a macro, a list or map
//! value, another variable) and without an error (a missing key, values that do not
//! compare). Otherwise [`Program::run`] answers `None`, and the interpreter evaluates
//! the whole expression again from the start, which is sound because evaluating an
//! expression changes nothing. So a program can make an answer cheaper, never
//! different. The tests hold it to that: every operator over every kind of scalar
//! here, and the built-in pack over every fixture and corpus file in
//! `host/compiler/tests/typed_programs.rs`.

use super::SKU_OF_RESOURCE;
use super::functions;
use crate::ast::{self, Expr as E};
use crate::cel_value::{self, Scalar, ScalarField, key};
use crate::compute::Resource;
use cel_interpreter::Value as Cel;
use cel_interpreter::objects::Key;
use std::cmp::Ordering;

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
    Literal(Literal),
    /// `resource.<field>` for a field that holds a scalar.
    Field(ScalarField),
    /// `sku(resource.sku).<field>`, looked up in the SKU answer.
    Sku(Key),
    /// `settings` or a field of it (`settings.a.b`), borrowed from the evaluation's value.
    Settings(Vec<Key>),
    /// `has(<settings path>.<field>)`.
    Has(Box<Node>, String),
    /// `size(x)` of a string, list or map in `settings` (or of a string).
    Size(Box<Node>),
    /// `size(resource.<field>)` of a list or map field, counted without converting it.
    SizeOfResource(String),
    /// One of computeguard's functions of strings that answer a bool or null.
    Call(StringFunction, Box<[Node; 2]>),
    Not(Box<Node>),
    And(Box<[Node; 2]>),
    Or(Box<[Node; 2]>),
    /// `c ? a : b`.
    Conditional(Box<[Node; 3]>),
    Equals(Box<[Node; 2]>),
    NotEquals(Box<[Node; 2]>),
    /// `<`, `<=`, `>`, `>=`: true when the operands' order is one of these.
    Compare(Box<[Node; 2]>, [Ordering; 2]),
    /// `x in [literals]`.
    InList(Box<Node>, Vec<Literal>),
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

/// What a node evaluates to: a scalar, or a value of `settings` (which may be a list
/// or a map, for `size` and `has`).
#[derive(Clone, Copy, Debug)]
enum Val<'a> {
    Scalar(Scalar<'a>),
    Value(&'a Cel),
}

impl<'a> Val<'a> {
    /// The scalar, or None for a list, map or other non-scalar value.
    fn scalar(self) -> Option<Scalar<'a>> {
        match self {
            Val::Scalar(s) => Some(s),
            Val::Value(v) => Scalar::of(v),
        }
    }
}

/// An owned scalar literal.
#[derive(Debug)]
enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
}

impl Literal {
    fn of(l: &ast::Literal) -> Option<Self> {
        Some(match l {
            ast::Literal::Null => Literal::Null,
            ast::Literal::Bool(b) => Literal::Bool(*b),
            ast::Literal::Int(i) => Literal::Int(*i),
            ast::Literal::UInt(u) => Literal::UInt(*u),
            ast::Literal::Double(f) => Literal::Float(*f),
            ast::Literal::String(s) => Literal::Str(s.clone()),
            ast::Literal::Bytes(_) => return None,
        })
    }

    fn scalar(&self) -> Scalar<'_> {
        match self {
            Literal::Null => Scalar::Null,
            Literal::Bool(b) => Scalar::Bool(*b),
            Literal::Int(i) => Scalar::Int(*i),
            Literal::UInt(u) => Scalar::UInt(*u),
            Literal::Float(f) => Scalar::Float(*f),
            Literal::Str(s) => Scalar::Str(s),
        }
    }
}

/// The program for `e`, the expression as the interpreter runs it (after
/// `sku(resource.sku)` is bound); None when its root is nothing a program evaluates.
pub(super) fn compile(e: &E) -> Option<Program> {
    match node(e) {
        Node::Defer => None,
        root => Some(Program { root }),
    }
}

fn node(e: &E) -> Node {
    let pair = |a: &E, b: &E| Box::new([node(a), node(b)]);
    let is = |e: &E, name: &str| matches!(e, E::Ident(n) if n == name);
    match e {
        E::Literal(l) => Literal::of(l).map_or(Node::Defer, Node::Literal),
        E::Select {
            operand,
            field,
            test: false,
        } if is(operand, "resource") => ScalarField::named(field).map_or(Node::Defer, Node::Field),
        E::Select {
            operand,
            field,
            test: false,
        } if is(operand, SKU_OF_RESOURCE) => Node::Sku(key(field)),
        E::Select {
            operand,
            field,
            test: true,
        } => match settings_path(operand) {
            Some(path) => Node::Has(Box::new(path), field.clone()),
            None => Node::Defer,
        },
        E::Ident(_) | E::Select { .. } => settings_path(e).unwrap_or(Node::Defer),
        E::Call {
            func,
            target: None,
            args,
        } => match (func.as_str(), args.as_slice()) {
            ("!_", [a]) => Node::Not(Box::new(node(a))),
            ("_&&_", [a, b]) => Node::And(pair(a, b)),
            ("_||_", [a, b]) => Node::Or(pair(a, b)),
            ("_?_:_", [c, a, b]) => Node::Conditional(Box::new([node(c), node(a), node(b)])),
            ("_==_", [a, b]) => Node::Equals(pair(a, b)),
            ("_!=_", [a, b]) => Node::NotEquals(pair(a, b)),
            ("_<_", [a, b]) => Node::Compare(pair(a, b), [Ordering::Less; 2]),
            ("_<=_", [a, b]) => Node::Compare(pair(a, b), [Ordering::Less, Ordering::Equal]),
            ("_>_", [a, b]) => Node::Compare(pair(a, b), [Ordering::Greater; 2]),
            ("_>=_", [a, b]) => Node::Compare(pair(a, b), [Ordering::Greater, Ordering::Equal]),
            (
                "size",
                [
                    E::Select {
                        operand,
                        field,
                        test: false,
                    },
                ],
            ) if is(operand, "resource") && ScalarField::named(field).is_none() => {
                Node::SizeOfResource(field.clone())
            }
            ("size", [a]) => Node::Size(Box::new(node(a))),
            (name, [a, b]) if StringFunction::named(name).is_some() => {
                StringFunction::named(name).map_or(Node::Defer, |f| Node::Call(f, pair(a, b)))
            }
            ("@in", [a, E::List(items)]) => {
                let literals = items.iter().map(|i| match i {
                    E::Literal(l) => Literal::of(l),
                    _ => None,
                });
                match literals.collect::<Option<Vec<_>>>() {
                    Some(list) => Node::InList(Box::new(node(a)), list),
                    None => Node::Defer,
                }
            }
            _ => Node::Defer,
        },
        _ => Node::Defer,
    }
}

/// `settings` or a chain of fields of it, as a [`Node::Settings`].
fn settings_path(e: &E) -> Option<Node> {
    let mut path = Vec::new();
    let mut at = e;
    loop {
        match at {
            E::Ident(n) if n == "settings" => break,
            E::Select {
                operand,
                field,
                test: false,
            } => {
                path.push(key(field));
                at = operand;
            }
            _ => return None,
        }
    }
    path.reverse();
    Some(Node::Settings(path))
}

impl Program {
    /// The expression's value when it is a bool the program reaches by itself; None
    /// when the interpreter must answer.
    pub(super) fn run(&self, env: &Env<'_>) -> Option<bool> {
        match eval(&self.root, env)? {
            Scalar::Bool(b) => Some(b),
            _ => None,
        }
    }
}

/// A node's scalar value; None when the interpreter must answer (see [`value`]).
fn eval<'a>(n: &'a Node, env: &Env<'a>) -> Option<Scalar<'a>> {
    value(n, env)?.scalar()
}

/// A node's value; None where the interpreter would report an error or where the
/// program does not know the answer.
fn value<'a>(n: &'a Node, env: &Env<'a>) -> Option<Val<'a>> {
    let scalar = |s| Some(Val::Scalar(s));
    match n {
        // `settings.a.b`: each step a field present in a map, else the interpreter's
        // error (or its function value).
        Node::Settings(path) => {
            let mut at = env.settings;
            for k in path {
                match at {
                    Cel::Map(m) => at = m.map.get(k)?,
                    _ => return None,
                }
            }
            Some(Val::Value(at))
        }
        // The interpreter's `has` on a map compares each key's text with the field; on
        // anything else it is false.
        Node::Has(operand, field) => scalar(Scalar::Bool(match value(operand, env)? {
            Val::Value(Cel::Map(m)) => m.map.keys().any(|k| match k {
                Key::String(s) => s.as_str() == field,
                other => other.to_string() == *field,
            }),
            _ => false,
        })),
        // cel-interpreter's `size`: a string's bytes, a list's items, a map's entries.
        Node::Size(a) => {
            let n = match value(a, env)? {
                Val::Scalar(Scalar::Str(s)) => s.len(),
                Val::Value(Cel::String(s)) => s.len(),
                Val::Value(Cel::List(l)) => l.len(),
                Val::Value(Cel::Map(m)) => m.map.len(),
                _ => return None,
            };
            scalar(Scalar::Int(i64::try_from(n).ok()?))
        }
        Node::SizeOfResource(field) => {
            let n = cel_value::collection_len(env.resource, field)?;
            scalar(Scalar::Int(i64::try_from(n).ok()?))
        }
        Node::Call(f, args) => {
            let text = |s: Scalar<'a>| match s {
                Scalar::Str(s) => Some(s),
                _ => None,
            };
            let (a, b) = (eval(&args[0], env)?, eval(&args[1], env)?);
            scalar(f.call(text(a), text(b)).map_or(Scalar::Null, Scalar::Bool))
        }
        _ => scalar(eval_scalar(n, env)?),
    }
}

/// The nodes whose value is always a scalar.
fn eval_scalar<'a>(n: &'a Node, env: &Env<'a>) -> Option<Scalar<'a>> {
    Some(match n {
        Node::Literal(l) => l.scalar(),
        Node::Field(f) => f.read(env.resource),
        Node::Sku(k) => match env.sku? {
            Cel::Map(m) => Scalar::of(m.map.get(k)?)?,
            _ => return None,
        },
        Node::Not(a) => Scalar::Bool(!truthy(eval(a, env)?)),
        Node::And(p) => Scalar::Bool(truthy(eval(&p[0], env)?) && truthy(eval(&p[1], env)?)),
        // `a || b` is `a` itself when `a` is truthy, else `b` itself.
        Node::Or(p) => match eval(&p[0], env)? {
            left if truthy(left) => left,
            _ => eval(&p[1], env)?,
        },
        Node::Conditional(p) => {
            if truthy(eval(&p[0], env)?) {
                eval(&p[1], env)?
            } else {
                eval(&p[2], env)?
            }
        }
        Node::Equals(p) => Scalar::Bool(equal(eval(&p[0], env)?, eval(&p[1], env)?)),
        Node::NotEquals(p) => Scalar::Bool(!equal(eval(&p[0], env)?, eval(&p[1], env)?)),
        Node::Compare(p, accepted) => {
            let order = compare(eval(&p[0], env)?, eval(&p[1], env)?)?;
            Scalar::Bool(accepted.contains(&order))
        }
        Node::InList(a, list) => {
            let x = eval(a, env)?;
            Scalar::Bool(list.iter().any(|l| equal(l.scalar(), x)))
        }
        Node::Defer
        | Node::Settings(_)
        | Node::Has(..)
        | Node::Size(_)
        | Node::SizeOfResource(_)
        | Node::Call(..) => return None,
    })
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
    ) -> (Option<bool>, String) {
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
            node_selection: [("agentpool".to_string(), "gpu".to_string())].into(),
            ..Resource::default()
        };
        let unknown = Resource {
            sku: Some("Standard_Nope".into()),
            region: Some("westeurope".into()),
            min_nodes: Some(-1),
            gpu_requests: 0.5,
            kubernetes_version: Some("1.27".into()),
            cuda: Some("8.0".into()),
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
                    Some(b) => {
                        answered += 1;
                        let answer = format!("{:?}", Ok::<_, ()>(Cel::Bool(b)));
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
        // non-bool result, a list answer of the SKU, another variable: None.
        for src in [
            "region(resource.region).known",
            "resource.zones == []",
            "size(resource.namespace) == 0",
            "settings.regions == null",
            "@sku(resource.sku).nosuchfield == null",
            "resource.sku < 1",
            "resource.sku",
            "@sku(resource.sku).sources == null",
            "asOf == ''",
            "resource.sku in ['a', resource.region]",
            "false || resource.sku",
        ] {
            assert_eq!(run(src), None, "{src}");
        }
        // Reached only past what decides the answer, the same parts do not matter.
        assert_eq!(run("false && region(resource.region).known"), Some(false));
        assert_eq!(
            run("@sku(resource.sku).known || resource.sku < 1"),
            Some(true)
        );
        assert_eq!(run("resource.region == 'eastus' ? true : asOf"), Some(true));
    }

    #[test]
    fn only_expressions_with_something_to_evaluate_compile() {
        assert!(compile(&parse("region(resource.region).known")).is_none());
        assert!(compile(&parse("resource.zones == []")).is_some());
        assert!(compile(&parse("resource.zones")).is_none());
        assert!(compile(&parse("resource.sku != null")).is_some());
    }
}
