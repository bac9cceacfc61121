//! Bicep source to the ARM template shape, with the Bicep position of every node.
//!
//! The text is parsed with the tree-sitter Bicep grammar; the tree is then translated the way
//! `bicep build` would lay it out, so one normaliser (in the policy) reads both formats:
//!
//! - `param x string = 'v'` becomes `parameters.x` with `type` and `defaultValue`;
//! - `var y = ...` becomes `variables.y`;
//! - `resource sym 'Type@version' = {...}` becomes an entry of `resources` with `type`,
//!   `apiVersion`, `symbolicName` and the body's properties; `existing` adds `"existing": true`,
//!   `if (c)` a `condition`, a `[for ...]` loop a `copy` (the loop's item is
//!   `<collection>[copyIndex()]` and its index `copyIndex()`, as `bicep build` writes them);
//!   a nested `resource` goes to the
//!   entry's own `resources` with its relative type; `parent: sym` becomes an ARM name
//!   `[format('{0}/{1}', <parent name>, <name>)]`;
//! - `module sym 'file' = {...}` becomes a `Microsoft.Resources/deployments` entry with its
//!   `params` as `properties.parameters` and the path as written in `module` (the module's
//!   file is not read here; the CLI follows local modules);
//! - literals stay JSON values; a reference to a parameter or variable becomes
//!   `[parameters('x')]` / `[variables('y')]`, and any other expression the ARM expression it
//!   compiles to (`[resourceGroup().location]`, `[concat('vnet-', parameters('n'))]`), which
//!   the policy resolves where it is literal and otherwise reports as unresolved.
//!
//! Comments are never data. Outputs, types, functions, imports and metadata carry no compute
//! facts and are skipped.

use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use tree_sitter::Node as TsNode;

mod params;

pub use params::{BicepParams, decode_bicepparam};

use crate::text::LineIndex;
use crate::tree::{Kind, Node};
use crate::{DecodeError, Document, Span, Syntax};

/// Decodes a Bicep file into one document in the ARM template shape.
///
/// # Errors
///
/// Text that is not valid Bicep: the error names the line and column of the first syntax error
/// and what was expected there (`invalid bicep: expected `}``, `invalid bicep: unexpected `=``).
pub fn decode_bicep(text: &str) -> Result<Document, DecodeError> {
    let (body, base) = match text.strip_prefix('\u{feff}') {
        Some(rest) => (rest, text.len() - rest.len()),
        None => (text, 0),
    };
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_bicep::LANGUAGE.into())
        .map_err(|e| {
            DecodeError::invalid(Syntax::Bicep, 1, 1, format!("grammar unavailable: {e}"))
        })?;
    let tree = parser
        .parse(body, None)
        .ok_or_else(|| DecodeError::invalid(Syntax::Bicep, 1, 1, "the parser gave up"))?;
    let lines = LineIndex::new(body, base);
    let root = tree.root_node();
    if root.has_error() {
        return Err(syntax_error(root, body, &lines));
    }
    let mut ctx = Ctx {
        text: body,
        lines: &lines,
        params: BTreeSet::new(),
        vars: BTreeSet::new(),
        names: BTreeMap::new(),
        loops: RefCell::new(Vec::new()),
    };
    ctx.declare(root);
    let node = ctx.infrastructure(root);
    let (value, positions) = node.into_value();
    Ok(Document {
        index: 0,
        value,
        positions,
    })
}

/// The first syntax error of the tree, worded as what was expected.
fn syntax_error(root: TsNode, text: &str, lines: &LineIndex) -> DecodeError {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.is_missing() {
            let at = lines.span(n.start_byte());
            return DecodeError::invalid_at(Syntax::Bicep, at, format!("expected `{}`", n.kind()));
        }
        if n.is_error() {
            let at = lines.span(n.start_byte());
            let token: String = text
                .get(n.start_byte()..n.end_byte())
                .unwrap_or_default()
                .chars()
                .take(30)
                .collect();
            let token = token.lines().next().unwrap_or_default().trim().to_string();
            let parent = n.parent().map_or("file", |p| p.kind()).replace('_', " ");
            return DecodeError::invalid_at(
                Syntax::Bicep,
                at,
                if token.is_empty() {
                    format!("unexpected end of input in {parent}")
                } else {
                    let hint = match parent.as_str() {
                        "object" => "; expected `name: value` or `}`",
                        "array" => "; expected a value or `]`",
                        _ => "",
                    };
                    format!("unexpected `{token}` in {parent}{hint}")
                },
            );
        }
        let mut c = n.walk();
        let children: Vec<_> = n
            .children(&mut c)
            .filter(|c| c.has_error() || c.is_missing())
            .collect();
        stack.extend(children.into_iter().rev());
    }
    DecodeError::invalid(Syntax::Bicep, 1, 1, "syntax error")
}

/// Building translated nodes (the tree is shared with the HCL decoder).
impl Node {
    fn scalar(span: Span, v: impl Into<Value>) -> Node {
        Node {
            span,
            kind: Kind::Scalar(v.into()),
        }
    }

    fn object(span: Span) -> Node {
        Node {
            span,
            kind: Kind::Object(Vec::new()),
        }
    }

    /// Sets `key` (replacing an earlier entry of the same key).
    fn set(&mut self, key: &str, span: Span, node: Node) {
        if let Kind::Object(entries) = &mut self.kind {
            entries.retain(|(k, ..)| k != key);
            entries.push((key.to_string(), span, node));
        }
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        match &mut self.kind {
            Kind::Object(entries) => entries.iter_mut().find(|(k, ..)| k == key).map(|(.., n)| n),
            _ => None,
        }
    }
}

struct Ctx<'a> {
    text: &'a str,
    lines: &'a LineIndex<'a>,
    params: BTreeSet<String>,
    vars: BTreeSet<String>,
    /// Resource symbol -> the ARM expression of its name (for `parent:` and `sym.name`).
    names: BTreeMap<String, String>,
    /// Loop variables in scope, innermost last: the name and the ARM expression it stands for.
    loops: RefCell<Vec<(String, String)>>,
}

/// Named children that carry meaning (comments are never data).
fn children(n: TsNode) -> Vec<TsNode> {
    let mut c = n.walk();
    n.named_children(&mut c)
        .filter(|c| c.kind() != "comment" && c.kind() != "diagnostic_comment")
        .collect()
}

fn child_of<'t>(n: TsNode<'t>, kind: &str) -> Option<TsNode<'t>> {
    children(n).into_iter().find(|c| c.kind() == kind)
}

/// An ARM string literal inside an expression.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl Ctx<'_> {
    fn src(&self, n: TsNode) -> &str {
        self.text
            .get(n.start_byte()..n.end_byte())
            .unwrap_or_default()
    }

    fn span(&self, n: TsNode) -> Span {
        self.lines.span(n.start_byte())
    }

    /// First pass: which identifiers are parameters, variables and resources.
    fn declare(&mut self, root: TsNode) {
        for st in children(root) {
            let name = child_of(st, "identifier").map(|i| self.src(i).to_string());
            match (st.kind(), name) {
                ("parameter_declaration", Some(n)) => {
                    self.params.insert(n);
                }
                ("variable_declaration", Some(n)) => {
                    self.vars.insert(n);
                }
                _ => {}
            }
        }
        // Resource names may use parameters and variables, so resolve them after both are known.
        let mut stack: Vec<(TsNode, Option<String>)> = children(root)
            .into_iter()
            .filter(|s| s.kind() == "resource_declaration")
            .map(|s| (s, None))
            .collect();
        while let Some((st, parent)) = stack.pop() {
            let Some(sym) = child_of(st, "identifier").map(|i| self.src(i).to_string()) else {
                continue;
            };
            let Some(body) = resource_body(st) else {
                continue;
            };
            let mut name = None;
            let mut explicit_parent = None;
            for prop in children(body) {
                if prop.kind() != "object_property" {
                    continue;
                }
                let parts = children(prop);
                match (parts.first(), parts.get(1)) {
                    (Some(k), Some(v)) if self.src(*k) == "name" => name = Some(self.arm(*v)),
                    (Some(k), Some(v)) if self.src(*k) == "parent" => {
                        explicit_parent = Some(self.src(*v).to_string())
                    }
                    (Some(r), None) if r.kind() == "resource_declaration" => {
                        stack.push((*r, Some(sym.clone())))
                    }
                    _ => {}
                }
            }
            let parent = parent.or(explicit_parent);
            if let Some(name) = name {
                let full = match parent.and_then(|p| self.names.get(&p).cloned()) {
                    Some(p) => format!("format('{{0}}/{{1}}', {p}, {name})"),
                    None => name,
                };
                self.names.insert(sym, full);
            }
        }
    }

    fn infrastructure(&self, root: TsNode) -> Node {
        let at = self.span(root);
        let mut doc = Node::object(at);
        doc.set(
            "$schema",
            at,
            Node::scalar(
                at,
                "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
            ),
        );
        doc.set("contentVersion", at, Node::scalar(at, "1.0.0.0"));
        let mut params = Node::object(at);
        let mut vars = Node::object(at);
        let mut resources = Vec::new();
        for st in children(root) {
            match st.kind() {
                "parameter_declaration" => {
                    let Some(id) = child_of(st, "identifier") else {
                        continue;
                    };
                    let mut p = Node::object(self.span(st));
                    if let Some(t) = child_of(st, "type") {
                        p.set(
                            "type",
                            self.span(t),
                            Node::scalar(self.span(t), self.src(t)),
                        );
                    }
                    if let Some(default) = children(st)
                        .into_iter()
                        .skip_while(|c| c.kind() != "type")
                        .nth(1)
                    {
                        p.set("defaultValue", self.span(default), self.value(default));
                    }
                    params.set(self.src(id), self.span(id), p);
                }
                "variable_declaration" => {
                    let parts = children(st);
                    if let (Some(id), Some(v)) = (parts.first(), parts.get(1)) {
                        vars.set(self.src(*id), self.span(*id), self.value(*v));
                    }
                }
                "resource_declaration" => {
                    if let Some(r) = self.resource(st, None) {
                        resources.push(r);
                    }
                }
                "module_declaration" => resources.push(self.module(st)),
                _ => {}
            }
        }
        doc.set("parameters", at, params);
        doc.set("variables", at, vars);
        doc.set(
            "resources",
            at,
            Node {
                span: at,
                kind: Kind::Array(resources),
            },
        );
        doc
    }

    /// `resource sym 'Type@version' [existing] = body`. `parent_symbol`: the resource it is
    /// nested in.
    fn resource(&self, st: TsNode, parent_symbol: Option<&str>) -> Option<Node> {
        let sym = child_of(st, "identifier")?;
        let ty = child_of(st, "string")?;
        let type_text = self.string_literal(ty).unwrap_or_default();
        let (ty_name, version) = type_text.split_once('@').unwrap_or((&type_text, ""));
        let mut r = Node::object(self.span(st));
        r.set("type", self.span(ty), Node::scalar(self.span(ty), ty_name));
        r.set(
            "apiVersion",
            self.span(ty),
            Node::scalar(self.span(ty), version),
        );
        r.set(
            "symbolicName",
            self.span(sym),
            Node::scalar(self.span(sym), self.src(sym)),
        );
        let mut c = st.walk();
        if st
            .children(&mut c)
            .any(|k| !k.is_named() && k.kind() == "existing")
        {
            r.set("existing", self.span(st), Node::scalar(self.span(st), true));
        }
        let (body, condition, loop_source) = self.body_parts(st);
        let mark = self.bind_loop(st, loop_source);
        if let Some(cond) = condition {
            r.set("condition", self.span(cond), self.value(cond));
        }
        if let Some(src) = loop_source {
            let mut copy = Node::object(self.span(src));
            copy.set(
                "name",
                self.span(sym),
                Node::scalar(self.span(sym), self.src(sym)),
            );
            copy.set(
                "count",
                self.span(src),
                Node::scalar(self.span(src), format!("[length({})]", self.arm(src))),
            );
            r.set("copy", self.span(src), copy);
        }
        let mut nested = Vec::new();
        let mut parent_expr = parent_symbol.map(str::to_string);
        if let Some(body) = body {
            for prop in children(body) {
                if prop.kind() != "object_property" {
                    continue;
                }
                let parts = children(prop);
                match (parts.first(), parts.get(1)) {
                    (Some(res), None) if res.kind() == "resource_declaration" => {
                        if let Some(n) = self.resource(*res, Some(self.src(sym))) {
                            nested.push(n);
                        }
                    }
                    (Some(k), Some(v)) => {
                        let key = self.key(*k);
                        if key == "parent" && parent_symbol.is_none() {
                            parent_expr = Some(self.src(*v).to_string());
                            continue;
                        }
                        r.set(&key, self.span(*k), self.value(*v));
                    }
                    _ => {}
                }
            }
        }
        // `parent: ws` (not nesting): the ARM name is `<parent name>/<name>`.
        if parent_symbol.is_none()
            && let Some(p) = parent_expr.and_then(|p| self.names.get(&p).cloned())
            && let Some(name) = r.get_mut("name")
        {
            let own = match &name.kind {
                Kind::Scalar(Value::String(s)) => {
                    match s.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                        Some(e) if !s.starts_with("[[") => e.to_string(),
                        _ => quote(s),
                    }
                }
                _ => "''".to_string(),
            };
            name.kind = Kind::Scalar(Value::String(format!(
                "[format('{{0}}/{{1}}', {p}, {own})]"
            )));
        }
        if !nested.is_empty() {
            let at = self.span(st);
            r.set(
                "resources",
                at,
                Node {
                    span: at,
                    kind: Kind::Array(nested),
                },
            );
        }
        self.loops.borrow_mut().truncate(mark);
        Some(r)
    }

    /// Binds the variables of the `[for ...]` loop of the declaration `st` (iterating
    /// `source`) as `bicep build` compiles them: the item is `<source>[copyIndex()]`, the
    /// index `copyIndex()`. Returns the mark to truncate the bindings to afterwards.
    fn bind_loop(&self, st: TsNode, source: Option<TsNode>) -> usize {
        let mark = self.loops.borrow().len();
        let (Some(source), Some(lp)) = (
            source,
            children(st)
                .into_iter()
                .find(|c| c.kind() == "for_statement"),
        ) else {
            return mark;
        };
        let collection = self.arm(source);
        let mut bound = Vec::new();
        if let Some(item) = lp.child_by_field_name("initializer") {
            bound.push((
                self.src(item).to_string(),
                format!("{collection}[copyIndex()]"),
            ));
        } else if let Some(params) = child_of(lp, "for_loop_parameters") {
            for p in children(params) {
                match p.kind() {
                    "loop_variable" => bound.push((
                        self.src(p).to_string(),
                        format!("{collection}[copyIndex()]"),
                    )),
                    "loop_enumerator" => {
                        bound.push((self.src(p).to_string(), "copyIndex()".to_string()))
                    }
                    _ => {}
                }
            }
        }
        self.loops.borrow_mut().extend(bound);
        mark
    }

    /// The object body of a resource or module, its `if` condition and its loop source.
    fn body_parts<'t>(
        &self,
        st: TsNode<'t>,
    ) -> (Option<TsNode<'t>>, Option<TsNode<'t>>, Option<TsNode<'t>>) {
        for c in children(st) {
            match c.kind() {
                "object" => return (Some(c), None, None),
                "if_statement" => {
                    let parts = children(c);
                    let cond = parts
                        .iter()
                        .find(|p| p.kind() == "parenthesized_expression")
                        .and_then(|p| children(*p).into_iter().next());
                    return (
                        parts.iter().find(|p| p.kind() == "object").copied(),
                        cond,
                        None,
                    );
                }
                "for_statement" => {
                    let body = c.child_by_field_name("body");
                    let (obj, cond) = match body {
                        Some(b) if b.kind() == "if_statement" => {
                            let parts = children(b);
                            (
                                parts.iter().find(|p| p.kind() == "object").copied(),
                                parts
                                    .iter()
                                    .find(|p| p.kind() == "parenthesized_expression")
                                    .and_then(|p| children(*p).into_iter().next()),
                            )
                        }
                        other => (other.filter(|b| b.kind() == "object"), None),
                    };
                    // The collection iterated: the expression after `in`.
                    let mut w = c.walk();
                    let kids: Vec<_> = c.children(&mut w).collect();
                    let source = kids
                        .iter()
                        .position(|k| !k.is_named() && k.kind() == "in")
                        .and_then(|i| kids.get(i + 1))
                        .copied();
                    return (obj, cond, source);
                }
                _ => {}
            }
        }
        (None, None, None)
    }

    fn module(&self, st: TsNode) -> Node {
        let at = self.span(st);
        let mut m = Node::object(at);
        m.set(
            "type",
            at,
            Node::scalar(at, "Microsoft.Resources/deployments"),
        );
        m.set("apiVersion", at, Node::scalar(at, "2022-09-01"));
        if let Some(sym) = child_of(st, "identifier") {
            m.set(
                "symbolicName",
                self.span(sym),
                Node::scalar(self.span(sym), self.src(sym)),
            );
        }
        if let Some(path) = child_of(st, "string") {
            m.set(
                "module",
                self.span(path),
                Node::scalar(
                    self.span(path),
                    self.string_literal(path).unwrap_or_default(),
                ),
            );
        }
        let (body, condition, loop_source) = self.body_parts(st);
        let mark = self.bind_loop(st, loop_source);
        if let Some(cond) = condition {
            m.set("condition", self.span(cond), self.value(cond));
        }
        if let Some(src) = loop_source {
            let mut copy = Node::object(self.span(src));
            if let Some(sym) = child_of(st, "identifier") {
                copy.set(
                    "name",
                    self.span(sym),
                    Node::scalar(self.span(sym), self.src(sym)),
                );
            }
            copy.set(
                "count",
                self.span(src),
                Node::scalar(self.span(src), format!("[length({})]", self.arm(src))),
            );
            m.set("copy", self.span(src), copy);
        }
        let mut props = Node::object(at);
        props.set("mode", at, Node::scalar(at, "Incremental"));
        if let Some(body) = body {
            for prop in children(body) {
                let parts = children(prop);
                let (Some(k), Some(v)) = (parts.first(), parts.get(1)) else {
                    continue;
                };
                let key = self.key(*k);
                if key == "params" {
                    let mut passed = self.value(*v);
                    if let Kind::Object(entries) = &mut passed.kind {
                        for (_, span, node) in entries.iter_mut() {
                            let inner = std::mem::replace(node, Node::object(*span));
                            node.set("value", inner.span, inner);
                        }
                    }
                    props.set("parameters", self.span(*k), passed);
                } else {
                    m.set(&key, self.span(*k), self.value(*v));
                }
            }
        }
        m.set("properties", at, props);
        self.loops.borrow_mut().truncate(mark);
        m
    }

    fn key(&self, k: TsNode) -> String {
        if k.kind() == "string" {
            self.string_literal(k)
                .unwrap_or_else(|| self.src(k).to_string())
        } else {
            self.src(k).to_string()
        }
    }

    /// The text of a string without interpolation.
    fn string_literal(&self, n: TsNode) -> Option<String> {
        let mut out = String::new();
        let mut c = n.walk();
        for part in n.named_children(&mut c) {
            match part.kind() {
                "string_content" => out.push_str(self.src(part)),
                "escape_sequence" => out.push_str(&unescape(self.src(part))),
                _ => return None,
            }
        }
        if n.named_child_count() == 0 {
            // `'''multi-line'''` strings have no children: strip the quotes.
            let s = self.src(n);
            if let Some(inner) = s.strip_prefix("'''").and_then(|s| s.strip_suffix("'''")) {
                return Some(inner.trim_start_matches(['\r', '\n']).to_string());
            }
        }
        Some(out)
    }

    /// A Bicep expression as a JSON node: literals as values, the rest as `[ARM expression]`.
    fn value(&self, n: TsNode) -> Node {
        let at = self.span(n);
        match n.kind() {
            "string" => match self.string_literal(n) {
                // A literal that starts with `[` is escaped as ARM does: `[[`.
                Some(s) if s.starts_with('[') => Node::scalar(at, format!("[{s}")),
                Some(s) => Node::scalar(at, s),
                None => Node::scalar(at, format!("[{}]", self.arm(n))),
            },
            "number" => match self.src(n).parse::<i64>() {
                Ok(i) => Node::scalar(at, i),
                Err(_) => Node::scalar(at, self.src(n)),
            },
            "boolean" => Node::scalar(at, self.src(n) == "true"),
            "null" => Node::scalar(at, Value::Null),
            "unary_expression"
                if self.src(n).starts_with('-')
                    && children(n).first().is_some_and(|c| c.kind() == "number") =>
            {
                match self.src(n).replace(char::is_whitespace, "").parse::<i64>() {
                    Ok(i) => Node::scalar(at, i),
                    Err(_) => Node::scalar(at, format!("[{}]", self.arm(n))),
                }
            }
            "object" => {
                let mut obj = Node::object(at);
                for prop in children(n) {
                    if prop.kind() != "object_property" {
                        continue;
                    }
                    let parts = children(prop);
                    if let (Some(k), Some(v)) = (parts.first(), parts.get(1)) {
                        obj.set(&self.key(*k), self.span(*k), self.value(*v));
                    }
                }
                obj
            }
            "array" => Node {
                span: at,
                kind: Kind::Array(
                    children(n)
                        .into_iter()
                        .filter(|c| c.kind() != "decorators")
                        .map(|c| self.value(c))
                        .collect(),
                ),
            },
            "parenthesized_expression" => match children(n).first() {
                Some(inner) => self.value(*inner),
                None => Node::scalar(at, Value::Null),
            },
            _ => Node::scalar(at, format!("[{}]", self.arm(n))),
        }
    }

    /// The ARM expression (without brackets) a Bicep expression compiles to.
    fn arm(&self, n: TsNode) -> String {
        let kids = children(n);
        let first = || kids.first().map(|c| self.arm(*c)).unwrap_or_default();
        match n.kind() {
            "identifier" | "compatible_identifier" => {
                let name = self.src(n);
                let bound = self
                    .loops
                    .borrow()
                    .iter()
                    .rev()
                    .find(|(v, _)| v == name)
                    .map(|(_, e)| e.clone());
                if let Some(e) = bound {
                    e
                } else if self.params.contains(name) {
                    format!("parameters({})", quote(name))
                } else if self.vars.contains(name) {
                    format!("variables({})", quote(name))
                } else {
                    // A resource, module or loop variable: known only at deploy time.
                    format!("reference({})", quote(name))
                }
            }
            "string" => {
                let mut parts = Vec::new();
                let mut literal = String::new();
                let mut c = n.walk();
                for part in n.named_children(&mut c) {
                    match part.kind() {
                        "string_content" => literal.push_str(self.src(part)),
                        "escape_sequence" => literal.push_str(&unescape(self.src(part))),
                        "interpolation" => {
                            if !literal.is_empty() {
                                parts.push(quote(&std::mem::take(&mut literal)));
                            }
                            if let Some(e) = children(part).first() {
                                parts.push(self.arm(*e));
                            }
                        }
                        _ => {}
                    }
                }
                if !literal.is_empty() || parts.is_empty() {
                    parts.push(quote(&literal));
                }
                if parts.len() == 1 {
                    parts.remove(0)
                } else {
                    format!("concat({})", parts.join(", "))
                }
            }
            "number" => self.src(n).to_string(),
            "boolean" => format!("{}()", self.src(n)),
            "null" => "null()".into(),
            "parenthesized_expression" => first(),
            "member_expression" => {
                let obj = n.child_by_field_name("object");
                let prop = n
                    .child_by_field_name("property")
                    .map(|p| self.src(p))
                    .unwrap_or_default();
                match obj {
                    // `sym.name` of a resource declared here: its name expression.
                    Some(o)
                        if o.kind() == "identifier"
                            && prop == "name"
                            && self.names.contains_key(self.src(o)) =>
                    {
                        self.names.get(self.src(o)).cloned().unwrap_or_default()
                    }
                    // `az.resourceGroup` / `sys.concat`: namespaced functions.
                    Some(o) if matches!(self.src(o), "az" | "sys") => prop.to_string(),
                    Some(o) => format!("{}.{prop}", self.arm(o)),
                    None => format!("unsupported({})", quote(self.src(n))),
                }
            }
            "subscript_expression" => {
                let obj = n
                    .child_by_field_name("object")
                    .map(|o| self.arm(o))
                    .unwrap_or_default();
                let index = n
                    .child_by_field_name("index")
                    .map(|o| self.arm(o))
                    .unwrap_or_default();
                format!("{obj}[{index}]")
            }
            "call_expression" => {
                let f = n
                    .child_by_field_name("function")
                    .map(|f| self.arm_function(f))
                    .unwrap_or_default();
                let args = n
                    .child_by_field_name("arguments")
                    .map(|a| {
                        children(a)
                            .into_iter()
                            .map(|x| self.arm(x))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                format!("{f}({args})")
            }
            "binary_expression" => {
                let l = n
                    .child_by_field_name("left")
                    .map(|x| self.arm(x))
                    .unwrap_or_default();
                let r = n
                    .child_by_field_name("right")
                    .map(|x| self.arm(x))
                    .unwrap_or_default();
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| self.src(o))
                    .unwrap_or_default();
                let f = match op {
                    "==" => "equals",
                    "!=" => return format!("not(equals({l}, {r}))"),
                    "&&" => "and",
                    "||" => "or",
                    "+" => "add",
                    "-" => "sub",
                    "*" => "mul",
                    "/" => "div",
                    "%" => "mod",
                    "<" => "less",
                    "<=" => "lessOrEquals",
                    ">" => "greater",
                    ">=" => "greaterOrEquals",
                    "??" => "coalesce",
                    _ => "unsupported",
                };
                format!("{f}({l}, {r})")
            }
            "unary_expression" => {
                let arg = n
                    .child_by_field_name("argument")
                    .map(|x| self.arm(x))
                    .unwrap_or_default();
                if self.src(n).starts_with('!') {
                    format!("not({arg})")
                } else if arg.bytes().all(|b| b.is_ascii_digit()) {
                    format!("-{arg}")
                } else {
                    format!("sub(0, {arg})")
                }
            }
            "ternary_expression" => {
                let part = |f: &str| {
                    n.child_by_field_name(f)
                        .map(|x| self.arm(x))
                        .unwrap_or_default()
                };
                format!(
                    "if({}, {}, {})",
                    part("condition"),
                    part("consequence"),
                    part("alternative")
                )
            }
            "array" => format!(
                "createArray({})",
                kids.iter()
                    .filter(|c| c.kind() != "decorators")
                    .map(|c| self.arm(*c))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "object" => {
                let mut args = Vec::new();
                for prop in &kids {
                    let parts = children(*prop);
                    if let (Some(k), Some(v)) = (parts.first(), parts.get(1)) {
                        args.push(quote(&self.key(*k)));
                        args.push(self.arm(*v));
                    }
                }
                format!("createObject({})", args.join(", "))
            }
            // `[for x in list: body]` (also `[for (x, i) in ...]`, `[for i in range(...)]` and
            // `[for x in list: if (c) body]`) as a value: `forEach(list, 'x', 'i', body[,
            // c])`, the loop's variables as `loopItem('x')` / `loopIndex('i')` in the body.
            "for_statement" => self.for_expression(n),
            // Lambdas and anything newer: not evaluated.
            _ => format!("unsupported({})", quote(self.src(n))),
        }
    }

    /// A `[for ...]` expression as `forEach(...)` (see [`Ctx::arm`]).
    fn for_expression(&self, n: TsNode) -> String {
        let mut w = n.walk();
        let kids: Vec<_> = n.children(&mut w).collect();
        let Some(source) = kids
            .iter()
            .position(|k| !k.is_named() && k.kind() == "in")
            .and_then(|i| kids.get(i + 1))
            .copied()
        else {
            return format!("unsupported({})", quote(self.src(n)));
        };
        let collection = self.arm(source);
        let (mut item, mut index) = (String::new(), String::new());
        if let Some(i) = n.child_by_field_name("initializer") {
            item = self.src(i).to_string();
        } else if let Some(params) = child_of(n, "for_loop_parameters") {
            for p in children(params) {
                match p.kind() {
                    "loop_variable" => item = self.src(p).to_string(),
                    "loop_enumerator" => index = self.src(p).to_string(),
                    _ => {}
                }
            }
        }
        let mark = self.loops.borrow().len();
        {
            let mut loops = self.loops.borrow_mut();
            if !item.is_empty() {
                loops.push((item.clone(), format!("loopItem({})", quote(&item))));
            }
            if !index.is_empty() {
                loops.push((index.clone(), format!("loopIndex({})", quote(&index))));
            }
        }
        let (body, condition) = match n.child_by_field_name("body") {
            Some(b) if b.kind() == "if_statement" => {
                let parts = children(b);
                (
                    parts.iter().find(|p| p.kind() == "object").copied(),
                    parts
                        .iter()
                        .find(|p| p.kind() == "parenthesized_expression")
                        .and_then(|p| children(*p).into_iter().next()),
                )
            }
            other => (other, None),
        };
        let body = body.map_or_else(|| "null()".to_string(), |b| self.arm(b));
        let condition = condition.map(|c| format!(", {}", self.arm(c)));
        self.loops.borrow_mut().truncate(mark);
        format!(
            "forEach({collection}, {}, {}, {body}{})",
            quote(&item),
            quote(&index),
            condition.unwrap_or_default()
        )
    }

    fn arm_function(&self, f: TsNode) -> String {
        match f.kind() {
            "identifier" => self.src(f).to_string(),
            "member_expression" => {
                let obj = f
                    .child_by_field_name("object")
                    .map(|o| self.src(o))
                    .unwrap_or_default();
                let prop = f
                    .child_by_field_name("property")
                    .map(|p| self.src(p))
                    .unwrap_or_default();
                if matches!(obj, "az" | "sys") {
                    prop.to_string()
                } else {
                    // A method on a resource (`kv.getSecret('x')`): deploy-time.
                    format!("unsupported_{prop}")
                }
            }
            _ => "unsupported".into(),
        }
    }
}

fn resource_body(st: TsNode) -> Option<TsNode> {
    for c in children(st) {
        match c.kind() {
            "object" => return Some(c),
            "if_statement" => return child_of(c, "object"),
            "for_statement" => {
                let b = c.child_by_field_name("body")?;
                return if b.kind() == "object" {
                    Some(b)
                } else {
                    child_of(b, "object")
                };
            }
            _ => {}
        }
    }
    None
}

fn unescape(e: &str) -> String {
    match e {
        "\\n" => "\n".into(),
        "\\r" => "\r".into(),
        "\\t" => "\t".into(),
        "\\\\" => "\\".into(),
        "\\'" => "'".into(),
        "\\$" => "$".into(),
        other => other
            .strip_prefix("\\u{")
            .and_then(|h| h.strip_suffix('}'))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .and_then(char::from_u32)
            .map_or_else(|| other.to_string(), |c| c.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::decode_bicep;
    use serde_json::json;

    #[test]
    fn params_vars_and_resources_take_the_arm_shape() -> Result<(), Box<dyn std::error::Error>> {
        let text = "\
// a comment naming Standard_NC6 is not data
@description('size')
param size string = 'Standard_NC6s_v3'
param loc string = resourceGroup().location
var name = 'gpu-${size}'
resource ws 'Microsoft.MachineLearningServices/workspaces@2024-04-01' existing = {
  name: 'ml'
}
resource c 'Microsoft.MachineLearningServices/workspaces/computes@2024-04-01' = if (true) {
  parent: ws
  name: name
  location: loc
  properties: {
    computeType: 'AmlCompute'
    properties: {
      vmSize: size
      scaleSettings: { minNodeCount: 0, maxNodeCount: -1 }
    }
  }
}
";
        let doc = decode_bicep(text)?;
        let v = &doc.value;
        assert!(!v.to_string().contains("Standard_NC6\""));
        assert_eq!(v["parameters"]["size"]["defaultValue"], "Standard_NC6s_v3");
        assert_eq!(
            v["parameters"]["loc"]["defaultValue"],
            "[resourceGroup().location]"
        );
        assert_eq!(
            v["variables"]["name"],
            "[concat('gpu-', parameters('size'))]"
        );
        let ws = &v["resources"][0];
        assert_eq!(
            (ws["existing"].clone(), ws["symbolicName"].clone()),
            (json!(true), json!("ws"))
        );
        let c = &v["resources"][1];
        assert_eq!(
            c["type"],
            "Microsoft.MachineLearningServices/workspaces/computes"
        );
        assert_eq!(c["apiVersion"], "2024-04-01");
        assert_eq!(c["condition"], true);
        assert_eq!(c["name"], "[format('{0}/{1}', 'ml', variables('name'))]");
        assert_eq!(
            c["properties"]["properties"]["vmSize"],
            "[parameters('size')]"
        );
        assert_eq!(
            c["properties"]["properties"]["scaleSettings"]["maxNodeCount"],
            -1
        );
        let at = |p: &str| doc.positions.get(p).map(|s| (s.line, s.column));
        assert_eq!(
            at("/resources/1/properties/properties/vmSize"),
            Some((16, 7))
        );
        assert_eq!(at("/resources/1/location"), Some((12, 3)));
        assert_eq!(at("/parameters/size/defaultValue"), Some((3, 21)));
        Ok(())
    }

    #[test]
    fn nested_resources_loops_and_modules() -> Result<(), Box<dyn std::error::Error>> {
        let text = "\
param pools array
resource aks 'Microsoft.ContainerService/managedClusters@2024-09-01' = {
  name: 'aks'
  resource gpu 'agentPools' = {
    name: 'gpu'
    properties: { vmSize: 'Standard_NC24ads_A100_v4' }
  }
}
resource many 'Microsoft.ContainerService/managedClusters/agentPools@2024-09-01' = [for p in pools: {
  name: p.name
}]
module m 'child.bicep' = {
  name: 'm'
  params: { sku: 'Standard_NC6' }
}
";
        let doc = decode_bicep(text)?;
        let v = &doc.value;
        assert_eq!(v["resources"][0]["resources"][0]["type"], "agentPools");
        assert_eq!(
            v["resources"][0]["resources"][0]["properties"]["vmSize"],
            "Standard_NC24ads_A100_v4"
        );
        assert_eq!(
            v["resources"][1]["copy"]["count"],
            "[length(parameters('pools'))]"
        );
        // The loop item is the collection at `copyIndex()`, as `bicep build` writes it.
        assert_eq!(
            v["resources"][1]["name"],
            "[parameters('pools')[copyIndex()].name]"
        );
        assert_eq!(v["resources"][2]["type"], "Microsoft.Resources/deployments");
        assert_eq!(
            v["resources"][2]["properties"]["parameters"]["sku"]["value"],
            "Standard_NC6"
        );
        let line = doc
            .positions
            .get("/resources/0/resources/0/properties/vmSize")
            .map(|s| s.line);
        assert_eq!(line, Some(6));
        Ok(())
    }

    #[test]
    fn loops_as_values_become_for_each() -> Result<(), Box<dyn std::error::Error>> {
        let text = "\
param pools array
var a = [for p in pools: { name: p.name, vmSize: p.size }]
var b = [for (p, i) in pools: if (p.on) { name: 'pool${i}' }]
";
        let doc = decode_bicep(text)?;
        let v = &doc.value;
        assert_eq!(
            v["variables"]["a"],
            "[forEach(parameters('pools'), 'p', '', createObject('name', loopItem('p').name, 'vmSize', loopItem('p').size))]"
        );
        assert_eq!(
            v["variables"]["b"],
            "[forEach(parameters('pools'), 'p', 'i', createObject('name', concat('pool', loopIndex('i'))), loopItem('p').on)]"
        );
        Ok(())
    }

    #[test]
    fn syntax_errors_name_line_and_expectation() {
        let err = decode_bicep("param a string = 'x'\nresource r 'T@1' = {\n  name: 'a'\n").err();
        let err = err.map(|e| (e.line, e.message.syntax, e.to_string()));
        assert!(
            matches!(&err, Some((l, Some(crate::Syntax::Bicep), shown)) if *l >= 2 && shown.starts_with("invalid bicep: ")),
            "{err:?}"
        );
        let err = decode_bicep("param = 3\n").err().map(|e| e.line);
        assert_eq!(err, Some(1));
    }

    proptest::proptest! {
        /// Any text, and especially near-Bicep text, decodes or fails with an error; it never
        /// panics, and every recorded position lies inside the text.
        #[test]
        fn decoding_never_panics(text in "(param|var|resource|module|[a-z]{1,4}|'[^']{0,6}'|\\$\\{|[{}()\\[\\]:=.,?!@]|[0-9]{1,3}| |\n|//[a-z ]{0,5}\n){0,40}") {
            if let Ok(doc) = decode_bicep(&text) {
                let lines = u32::try_from(text.lines().count().max(1)).unwrap_or(u32::MAX);
                if let Some(span) = doc.positions.get("") {
                    proptest::prop_assert!(span.line <= lines + 1);
                }
            }
        }
    }
}
