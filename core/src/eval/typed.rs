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
use crate::ast::{self, Expr as E};
use crate::cel_value::{Scalar, ScalarField, key};
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
    /// `has(settings.<field>)`.
    HasSetting(String),
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
        } if is(operand, "settings") => Node::HasSetting(field.clone()),
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

fn eval<'a>(n: &'a Node, env: &Env<'a>) -> Option<Scalar<'a>> {
    Some(match n {
        Node::Literal(l) => l.scalar(),
        Node::Field(f) => f.read(env.resource),
        Node::Sku(k) => match env.sku? {
            Cel::Map(m) => Scalar::of(m.map.get(k)?)?,
            _ => return None,
        },
        // The interpreter's `has` on a map compares each key's text with the field.
        Node::HasSetting(field) => Scalar::Bool(match env.settings {
            Cel::Map(m) => m.map.keys().any(|k| match k {
                Key::String(s) => s.as_str() == field,
                other => other.to_string() == *field,
            }),
            _ => false,
        }),
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
        Node::Defer => return None,
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
    ];

    /// `src` (with `@sku(resource.sku)` standing for the bound answer) parsed as the
    /// evaluator decodes it.
    fn parse(src: &str) -> E {
        let bound = src.replace("@sku(resource.sku)", "sku(resource.sku)");
        let e = ast::parse(&bound).unwrap_or_else(|e| panic!("{src}: {e:?}"));
        super::super::bind_sku_of_resource(e)
    }

    /// The typed answer and the interpreter's, for `src` on a resource.
    fn both(src: &str, r: &Resource, sku: &Cel, settings: &Cel) -> (Option<bool>, String) {
        let e = parse(src);
        let typed = compile(&e).and_then(|p| {
            p.run(&Env {
                resource: r,
                settings,
                sku: Some(sku),
            })
        });
        let functions = functions();
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
            min_nodes: Some(0),
            autoscale: Some(true),
            gpu_requests: 1.0,
            ..Resource::default()
        };
        let unknown = Resource {
            sku: Some("Standard_Nope".into()),
            min_nodes: Some(-1),
            gpu_requests: 0.5,
            ..Resource::default()
        };
        vec![Resource::default(), set, unknown]
    }

    #[test]
    fn every_operator_over_every_scalar_kind_answers_as_the_interpreter() {
        let settings = [
            json_to_cel(&json!({})),
            json_to_cel(&json!({"regions": {"allowed": ["eastus"]}})),
            json_to_cel(&json!(["not", "a", "map"])),
        ];
        let binary = ["==", "!=", "<", "<=", ">", ">=", "&&", "||"];
        // Operands that are a scalar on every resource: between two of them, `==`, `!=`
        // and `&&` always have a bool answer, which a program must give.
        let scalar = |o: &str| !o.contains("zones") && !o.contains("nosuchfield");
        let mut answered = 0;
        for r in resources() {
            let sku = super::super::views::SkuMemo {
                as_of: "2026-11-22".into(),
                entries: Default::default(),
            }
            .get(r.sku.as_deref().unwrap_or(""));
            for settings in &settings {
                let mut check = |src: String, must_answer: bool| {
                    let (typed, reference) = both(&src, &r, &sku, settings);
                    match typed {
                        Some(b) => {
                            answered += 1;
                            let answer = format!("{:?}", Ok::<_, ()>(Cel::Bool(b)));
                            assert_eq!(answer, reference, "{src}");
                        }
                        None => assert!(!must_answer, "no program answered {src}: {reference}"),
                    }
                };
                for a in OPERANDS {
                    check(format!("!{a}"), scalar(a));
                    check(format!("{a} in [1, 'a', null, true, 1.0]"), scalar(a));
                    check(format!("{a} ? true : false"), scalar(a));
                    for b in OPERANDS {
                        for op in binary {
                            let must = scalar(a) && scalar(b) && ["==", "!=", "&&"].contains(&op);
                            check(format!("{a} {op} {b}"), must);
                        }
                        check(format!("{a} ? {b} : false"), false);
                    }
                }
            }
        }
        assert!(answered > 10_000, "programs answered {answered}");
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
        let run = |src: &str| both(src, r, &sku, &settings).0;
        // A function call, a list field, a missing key, values that do not compare, a
        // non-bool result, a list answer of the SKU, another variable: None.
        for src in [
            "size(resource.zones) == 0",
            "resource.zones == []",
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
        assert_eq!(run("false && size(resource.zones) == 0"), Some(false));
        assert_eq!(
            run("@sku(resource.sku).known || resource.sku < 1"),
            Some(true)
        );
        assert_eq!(run("resource.region == 'eastus' ? true : asOf"), Some(true));
    }

    #[test]
    fn only_expressions_with_something_to_evaluate_compile() {
        assert!(compile(&parse("size(resource.zones) > 0")).is_some());
        assert!(compile(&parse("size(resource.zones)")).is_none());
        assert!(compile(&parse("resource.zones")).is_none());
        assert!(compile(&parse("resource.sku != null")).is_some());
    }
}
