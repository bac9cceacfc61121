//! A serialisable copy of the CEL abstract syntax tree.
//!
//! `cel-parser`'s parser is costly to initialise (its ANTLR tables are built on
//! first use, ~0.8 ms in a fresh Wasm instance). `computeguard build` therefore
//! parses every expression on the host, stores this tree in the pack, and the
//! runtime rebuilds `cel-parser`'s tree from it without ever touching the parser.

use cel_parser::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr as CExpr, IdedEntryExpr, IdedExpr, ListExpr,
    MapEntryExpr, MapExpr, SelectExpr, StructExpr, StructFieldExpr,
};
use cel_parser::reference::Val;
use serde::{Deserialize, Serialize};

/// A CEL expression node (mirror of `cel_parser::ast::Expr`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    /// An unset node, cel-parser's placeholder where parsing failed; a successful parse
    /// has none, and the evaluator turns one into a rule error.
    Unspecified,
    /// A function, method or operator call.
    Call {
        /// Function name; operators use CEL's internal names (`_&&_`, `_==_`, `_[_]`, `!_`).
        func: String,
        /// The receiver of a method-style call (`x` in `x.startsWith('a')`); None for a
        /// global call or an operator.
        target: Option<Box<Expr>>,
        /// The arguments, in order (the operands of an operator).
        args: Vec<Expr>,
    },
    /// A macro (`all`, `exists`, `exists_one`, `map`, `filter`) expanded into a loop.
    Comprehension(Box<Comprehension>),
    /// A variable (`resource`, `settings`, a macro's iteration variable) or type name.
    Ident(String),
    /// A list literal: `[a, b]`.
    List(Vec<Expr>),
    /// A scalar constant.
    Literal(Literal),
    /// Entries: key, value, optional.
    Map(Vec<(Expr, Expr, bool)>),
    /// A field of a map or message: `operand.field`, or `has(operand.field)`.
    Select {
        /// The expression whose field is read.
        operand: Box<Expr>,
        /// The field name.
        field: String,
        /// True for the presence test `has(operand.field)`, which yields whether the field
        /// is set instead of its value.
        test: bool,
    },
    /// Type name and fields: name, value, optional.
    Struct(String, Vec<(String, Expr, bool)>),
}

/// A comprehension produced by a macro (`all`, `exists`, `map`, `filter`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comprehension {
    /// What is iterated: a list (its items) or a map (its keys).
    pub iter_range: Expr,
    /// The variable bound to each item or key (`x` in `xs.all(x, ...)`).
    pub iter_var: String,
    /// The second variable of a two-variable comprehension; None for every macro
    /// cel-parser 0.10 expands.
    pub iter_var2: Option<String>,
    /// The accumulator's name (`@result` in cel-parser's macros, out of reach of CEL source).
    pub accu_var: String,
    /// The accumulator's value before the first iteration.
    pub accu_init: Expr,
    /// Evaluated before each iteration; the loop stops early when it is false (how
    /// `all` and `exists` short-circuit).
    pub loop_cond: Expr,
    /// The accumulator's next value, evaluated once per item.
    pub loop_step: Expr,
    /// The comprehension's value, computed from the accumulator after the loop.
    pub result: Expr,
}

/// A literal value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Literal {
    /// A string (`'a'`), escapes already decoded.
    String(String),
    /// `true` or `false`.
    Bool(bool),
    /// A signed 64-bit integer (`2`).
    Int(i64),
    /// An unsigned 64-bit integer (`2u`).
    UInt(u64),
    /// A 64-bit float (`3.5`).
    Double(f64),
    /// A byte string (`b'x'`).
    Bytes(Vec<u8>),
    /// `null`.
    Null,
}

/// A CEL syntax error: 1-based line and column within the expression text.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SyntaxError {
    /// Line within the expression text, from 1.
    pub line: u32,
    /// Column within that line, from 1; an incomplete expression is reported just
    /// after its last character.
    pub column: u32,
    /// The parser's description (`incomplete expression` when it gave up).
    pub message: String,
}

/// Parses CEL source (host side only: this initialises the ANTLR parser).
///
/// `cel-parser` 0.10 panics on some incomplete inputs (e.g. a trailing operator);
/// such a panic is caught and reported as a syntax error at the end of the text.
pub fn parse(source: &str) -> Result<Expr, Vec<SyntaxError>> {
    static HOOK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let parsed = {
        let _guard = HOOK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let result = std::panic::catch_unwind(|| cel_parser::Parser::new().parse(source));
        std::panic::set_hook(previous);
        result
    };
    let end = || {
        let line = source.lines().count().max(1);
        let column = source.lines().last().map_or(0, |l| l.chars().count()) + 1;
        (
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(column).unwrap_or(u32::MAX),
        )
    };
    match parsed {
        Ok(Ok(e)) => Ok(from_cel(&e)),
        Ok(Err(errs)) => Err(errs
            .errors
            .iter()
            .map(|e| SyntaxError {
                line: u32::try_from(e.pos.0).unwrap_or(1).max(1),
                column: u32::try_from(e.pos.1).unwrap_or(0).saturating_add(1),
                message: e.msg.clone(),
            })
            .collect()),
        Err(_) => {
            let (line, column) = end();
            Err(vec![SyntaxError {
                line,
                column,
                message: "incomplete expression".into(),
            }])
        }
    }
}

/// Converts `cel-parser`'s tree into the serialisable form.
pub fn from_cel(e: &IdedExpr) -> Expr {
    match &e.expr {
        CExpr::Unspecified => Expr::Unspecified,
        CExpr::Call(c) => Expr::Call {
            func: c.func_name.clone(),
            target: c.target.as_ref().map(|t| Box::new(from_cel(t))),
            args: c.args.iter().map(from_cel).collect(),
        },
        CExpr::Comprehension(c) => Expr::Comprehension(Box::new(Comprehension {
            iter_range: from_cel(&c.iter_range),
            iter_var: c.iter_var.clone(),
            iter_var2: c.iter_var2.clone(),
            accu_var: c.accu_var.clone(),
            accu_init: from_cel(&c.accu_init),
            loop_cond: from_cel(&c.loop_cond),
            loop_step: from_cel(&c.loop_step),
            result: from_cel(&c.result),
        })),
        CExpr::Ident(s) => Expr::Ident(s.clone()),
        CExpr::List(l) => Expr::List(l.elements.iter().map(from_cel).collect()),
        CExpr::Literal(v) => Expr::Literal(match v {
            Val::String(s) => Literal::String(s.clone()),
            Val::Boolean(b) => Literal::Bool(*b),
            Val::Int(i) => Literal::Int(*i),
            Val::UInt(u) => Literal::UInt(*u),
            Val::Double(d) => Literal::Double(*d),
            Val::Bytes(b) => Literal::Bytes(b.clone()),
            Val::Null => Literal::Null,
        }),
        CExpr::Map(m) => Expr::Map(
            m.entries
                .iter()
                .filter_map(|en| match &en.expr {
                    EntryExpr::MapEntry(me) => {
                        Some((from_cel(&me.key), from_cel(&me.value), me.optional))
                    }
                    EntryExpr::StructField(_) => None,
                })
                .collect(),
        ),
        CExpr::Select(s) => Expr::Select {
            operand: Box::new(from_cel(&s.operand)),
            field: s.field.clone(),
            test: s.test,
        },
        CExpr::Struct(s) => Expr::Struct(
            s.type_name.clone(),
            s.entries
                .iter()
                .filter_map(|en| match &en.expr {
                    EntryExpr::StructField(f) => {
                        Some((f.field.clone(), from_cel(&f.value), f.optional))
                    }
                    EntryExpr::MapEntry(_) => None,
                })
                .collect(),
        ),
    }
}

/// Rebuilds `cel-parser`'s tree (runtime side; no parser involved). Node ids are
/// renumbered; the interpreter does not depend on them.
pub fn to_cel(e: &Expr) -> IdedExpr {
    let mut next = 0;
    build(e, &mut next)
}

fn build(e: &Expr, next: &mut u64) -> IdedExpr {
    *next += 1;
    let id = *next;
    let expr = match e {
        Expr::Unspecified => CExpr::Unspecified,
        Expr::Call { func, target, args } => CExpr::Call(CallExpr {
            func_name: func.clone(),
            target: target.as_ref().map(|t| Box::new(build(t, next))),
            args: args.iter().map(|a| build(a, next)).collect(),
        }),
        Expr::Comprehension(c) => CExpr::Comprehension(ComprehensionExpr {
            iter_range: Box::new(build(&c.iter_range, next)),
            iter_var: c.iter_var.clone(),
            iter_var2: c.iter_var2.clone(),
            accu_var: c.accu_var.clone(),
            accu_init: Box::new(build(&c.accu_init, next)),
            loop_cond: Box::new(build(&c.loop_cond, next)),
            loop_step: Box::new(build(&c.loop_step, next)),
            result: Box::new(build(&c.result, next)),
        }),
        Expr::Ident(s) => CExpr::Ident(s.clone()),
        Expr::List(l) => CExpr::List(ListExpr {
            elements: l.iter().map(|x| build(x, next)).collect(),
        }),
        Expr::Literal(l) => CExpr::Literal(match l {
            Literal::String(s) => Val::String(s.clone()),
            Literal::Bool(b) => Val::Boolean(*b),
            Literal::Int(i) => Val::Int(*i),
            Literal::UInt(u) => Val::UInt(*u),
            Literal::Double(d) => Val::Double(*d),
            Literal::Bytes(b) => Val::Bytes(b.clone()),
            Literal::Null => Val::Null,
        }),
        Expr::Map(entries) => CExpr::Map(MapExpr {
            entries: entries
                .iter()
                .map(|(k, v, optional)| {
                    *next += 1;
                    IdedEntryExpr {
                        id: *next,
                        expr: EntryExpr::MapEntry(MapEntryExpr {
                            key: build(k, next),
                            value: build(v, next),
                            optional: *optional,
                        }),
                    }
                })
                .collect(),
        }),
        Expr::Select {
            operand,
            field,
            test,
        } => CExpr::Select(SelectExpr {
            operand: Box::new(build(operand, next)),
            field: field.clone(),
            test: *test,
        }),
        Expr::Struct(name, fields) => CExpr::Struct(StructExpr {
            type_name: name.clone(),
            entries: fields
                .iter()
                .map(|(f, v, optional)| {
                    *next += 1;
                    IdedEntryExpr {
                        id: *next,
                        expr: EntryExpr::StructField(StructFieldExpr {
                            field: f.clone(),
                            value: build(v, next),
                            optional: *optional,
                        }),
                    }
                })
                .collect(),
        }),
    };
    IdedExpr { id, expr }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_the_tree() {
        for src in [
            "resource.minNodes > 0 && !(has(resource.labels.x))",
            "resource.images.all(i, cudaOf(i) == null || versionAtLeast(cudaOf(i), '11.0'))",
            "{'a': [1, 2u, 3.5, b'x', null]}['a'].size() == 5",
            "resource.name + ' on ' + string(resource.sku)",
        ] {
            let parsed = cel_parser::Parser::new().parse(src).expect("parses");
            let ours = from_cel(&parsed);
            let back = to_cel(&ours);
            assert_eq!(from_cel(&back), ours, "{src}");
        }
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let errs = parse("resource.minNodes >").expect_err("incomplete");
        assert_eq!((errs[0].line, errs[0].column), (1, 20), "{errs:?}");
        let errs = parse("resource.sku ==\n  'a' 'b'").expect_err("junk");
        assert_eq!(errs[0].line, 2, "{errs:?}");
        assert!(parse("resource.minNodes > 0").is_ok());
    }
}
