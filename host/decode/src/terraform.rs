//! Terraform HCL (`.tf`, `.tfvars`) to the Terraform JSON configuration syntax, with the
//! position of every node, and `var.x` resolution from a module's variables.
//!
//! The output follows <https://developer.hashicorp.com/terraform/language/syntax/json>: a block
//! `resource "azurerm_kubernetes_cluster" "main" { ... }` becomes
//! `{"resource": {"azurerm_kubernetes_cluster": {"main": {...}}}}`, a nested block that appears
//! once becomes an object and one that repeats an array of objects, and an expression that is
//! not a literal becomes a `"${...}"` string holding its source text. The same policies then
//! read `.tf` and `.tf.json` files alike, and anything still written `${...}` after
//! [`TerraformVariables::resolve`] is unknown until `terraform plan`.

use std::ops::Range;

use std::collections::HashSet;

use hcl_edit::Span as _;
use hcl_edit::expr::{Expression, ObjectKey};
use hcl_edit::structure::{Body, Structure};
use hcl_edit::template::{Element, Template};
use serde_json::{Map, Number, Value};

use crate::text::{LineIndex, to_u32};
use crate::tree::{Kind, Node};
use crate::{DecodeError, Document, Span, Syntax, escape_key};

/// Decodes a Terraform HCL file (`.tf`) or a variable definitions file (`.tfvars`) into the
/// Terraform JSON configuration syntax.
///
/// An attribute is located at its key, a block at its type (`resource`), each label at the
/// label, so `/resource/azurerm_kubernetes_cluster_node_pool/gpu/vm_size` points at the
/// `vm_size` line. Comments are dropped: they are never data. Literal strings that contain
/// `${` or `%{` are escaped to `$${` and `%%{` as the JSON syntax requires. The returned
/// document's index is 0.
///
/// # Errors
///
/// Invalid HCL (`invalid hcl: ...` with the line and column `hcl-edit` reports), duplicate
/// attributes or object keys, an attribute and a block of the same name in one body, and
/// nesting deeper than 64 levels (the parser's limit).
pub fn decode_hcl(text: &str) -> Result<Document, DecodeError> {
    let (body_text, base) = match text.strip_prefix('\u{feff}') {
        Some(rest) => (rest, text.len() - rest.len()),
        None => (text, 0),
    };
    let body = hcl_edit::parser::parse_body(body_text).map_err(|e| hcl_error(&e, body_text))?;
    let lines = LineIndex::new(body_text, base);
    let root_span = lines.span(first_content(body_text));
    let ctx = Ctx {
        text: body_text,
        lines: &lines,
    };
    let (value, positions) = ctx.body(&body, root_span)?.into_value();
    Ok(Document {
        index: 0,
        value,
        positions,
    })
}

/// Offset of the first character that is not whitespace or a comment, for the root's span.
fn first_content(text: &str) -> usize {
    let mut rest = text;
    loop {
        let trimmed = rest.trim_start();
        if trimmed.starts_with('#') || trimmed.starts_with("//") {
            rest = trimmed.find('\n').map_or("", |nl| &trimmed[nl..]);
        } else if let Some(after) = trimmed.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |end| &after[end + 2..]);
        } else {
            return text.len() - trimmed.len();
        }
    }
}

fn hcl_error(error: &hcl_edit::parser::Error, text: &str) -> DecodeError {
    let location = error.location();
    // `hcl-edit` counts columns in bytes; positions count characters.
    let line_text = text.split('\n').nth(location.line().saturating_sub(1));
    let column = line_text
        .and_then(|l| l.get(..location.column().saturating_sub(1).min(l.len())))
        .map_or(location.column(), |prefix| prefix.chars().count() + 1);
    let message = match error.message() {
        "unexpected token" => {
            "unexpected token: expected an attribute (`name = value`) or a block (`type \"label\" { ... }`)"
        }
        other => other,
    };
    DecodeError::invalid(
        Syntax::Hcl,
        to_u32(location.line()),
        to_u32(column),
        message,
    )
}

struct Ctx<'a> {
    text: &'a str,
    lines: &'a LineIndex<'a>,
}

impl Ctx<'_> {
    fn at(&self, range: Option<Range<usize>>, fallback: Span) -> Span {
        range.map_or(fallback, |r| self.lines.span(r.start))
    }

    fn source(&self, range: Option<Range<usize>>) -> Option<&str> {
        range.and_then(|r| self.text.get(r))
    }

    fn body(&self, body: &Body, span: Span) -> Result<Node, DecodeError> {
        let mut entries: Vec<(String, Span, Node)> = Vec::new();
        // Keys set by an attribute; the others were made by blocks, which may repeat.
        let mut attributes = HashSet::new();
        for structure in body.iter() {
            match structure {
                Structure::Attribute(attr) => {
                    let key_span = self.at(attr.key.span(), span);
                    let key = attr.key.as_str();
                    if entries.iter().any(|(k, ..)| k == key) {
                        return Err(both(key, key_span));
                    }
                    let node = self.expr(&attr.value, key_span)?;
                    attributes.insert(key.to_owned());
                    entries.push((key.to_owned(), key_span, node));
                }
                Structure::Block(block) => {
                    let ident_span = self.at(block.ident.span(), span);
                    let mut path = vec![(block.ident.as_str().to_owned(), ident_span)];
                    for label in &block.labels {
                        path.push((label.as_str().to_owned(), self.at(label.span(), ident_span)));
                    }
                    let body_span = self.at(block.body.span(), ident_span);
                    let node = self.body(&block.body, body_span)?;
                    if attributes.contains(block.ident.as_str()) {
                        return Err(both(block.ident.as_str(), ident_span));
                    }
                    insert_block(&mut entries, &path, node)?;
                }
            }
        }
        Ok(Node {
            span,
            kind: Kind::Object(entries),
        })
    }

    fn expr(&self, expr: &Expression, fallback: Span) -> Result<Node, DecodeError> {
        let span = self.at(expr.span(), fallback);
        let scalar = |value: Value| Node {
            span,
            kind: Kind::Scalar(value),
        };
        Ok(match expr {
            Expression::Null(_) => scalar(Value::Null),
            Expression::Bool(b) => scalar(Value::Bool(*b.value())),
            Expression::Number(n) => {
                let n = n.value();
                let number = n
                    .as_u64()
                    .map(Number::from)
                    .or_else(|| n.as_i64().map(Number::from))
                    .or_else(|| n.as_f64().and_then(Number::from_f64));
                scalar(number.map_or_else(|| Value::String(n.to_string()), Value::Number))
            }
            Expression::String(s) => scalar(Value::String(escape_literal(s.value()))),
            Expression::Array(array) => {
                let items = array
                    .iter()
                    .map(|item| self.expr(item, span))
                    .collect::<Result<_, _>>()?;
                Node {
                    span,
                    kind: Kind::Array(items),
                }
            }
            Expression::Object(object) => {
                let mut entries: Vec<(String, Span, Node)> = Vec::new();
                for (key, value) in object.iter() {
                    let key_span = self.at(key.span(), span);
                    let name = match key {
                        ObjectKey::Ident(ident) => ident.as_str().to_owned(),
                        ObjectKey::Expression(Expression::String(s)) => s.value().clone(),
                        ObjectKey::Expression(other) => self.expression_text(other),
                    };
                    if entries.iter().any(|(k, ..)| *k == name) {
                        return Err(DecodeError::at(key_span, format!("duplicate key `{name}`")));
                    }
                    let node = self.expr(value.expr(), key_span)?;
                    entries.push((name, key_span, node));
                }
                Node {
                    span,
                    kind: Kind::Object(entries),
                }
            }
            Expression::StringTemplate(template) => scalar(Value::String(self.template(template))),
            Expression::HeredocTemplate(heredoc) => {
                scalar(Value::String(self.template(&heredoc.template)))
            }
            other => scalar(Value::String(self.expression_text(other))),
        })
    }

    /// An expression that is not a literal, as a JSON-syntax template: `${var.x}`.
    fn expression_text(&self, expr: &Expression) -> String {
        let source = self
            .source(expr.span())
            .map_or_else(|| expr.to_string(), str::to_owned);
        format!("${{{}}}", source.trim())
    }

    /// A template in the JSON syntax: literals escaped, interpolations and directives as
    /// written in the source.
    fn template(&self, template: &Template) -> String {
        let mut out = String::new();
        for element in template.iter() {
            match element {
                Element::Literal(literal) => out.push_str(&escape_literal(literal.value())),
                other => match (self.source(other.span()), other) {
                    (Some(source), _) => out.push_str(source),
                    // Spans are always set by the parser; keep the part unresolved if not.
                    (None, Element::Interpolation(i)) => out.push_str(&format!("${{{}}}", i.expr)),
                    (None, _) => out.push_str("%{?}"),
                },
            }
        }
        out
    }
}

/// The error for a name used both as an attribute and as a block type.
fn both(key: &str, span: Span) -> DecodeError {
    DecodeError::at(
        span,
        format!("`{key}` is both an attribute and a block: expected one or the other"),
    )
}

/// Adds a block at `path` (its type, then its labels), joining blocks of the same type: the
/// second block of a type turns the entry into an array. At the first level `entries` may
/// hold attributes too; the caller has rejected an attribute named like the block.
fn insert_block(
    entries: &mut Vec<(String, Span, Node)>,
    path: &[(String, Span)],
    node: Node,
) -> Result<(), DecodeError> {
    let Some(((key, key_span), rest)) = path.split_first() else {
        return Ok(());
    };
    let Some((_, _, existing)) = entries.iter_mut().find(|(k, ..)| k == key) else {
        entries.push((key.clone(), *key_span, nest(rest, node)));
        return Ok(());
    };
    if rest.is_empty() {
        let span = existing.span;
        let previous = std::mem::replace(
            existing,
            Node {
                span,
                kind: Kind::Array(Vec::new()),
            },
        );
        let mut items = match previous.kind {
            Kind::Array(items) => items,
            kind => vec![Node {
                span: previous.span,
                kind,
            }],
        };
        items.push(node);
        existing.kind = Kind::Array(items);
        return Ok(());
    }
    match &mut existing.kind {
        Kind::Object(children) => insert_block(children, rest, node),
        _ => Err(DecodeError::at(
            *key_span,
            format!("block `{key}` is declared both with and without labels"),
        )),
    }
}

/// Wraps `node` in one object per remaining label.
fn nest(labels: &[(String, Span)], node: Node) -> Node {
    match labels.split_first() {
        None => node,
        Some(((key, key_span), rest)) => Node {
            span: *key_span,
            kind: Kind::Object(vec![(key.clone(), *key_span, nest(rest, node))]),
        },
    }
}

/// A literal string in the JSON syntax, where `${` and `%{` start templates.
fn escape_literal(text: &str) -> String {
    if text.contains("${") || text.contains("%{") {
        text.replace("${", "$${").replace("%{", "%%{")
    } else {
        text.to_owned()
    }
}

/// What a module's expressions refer to, to replace references before policies run: its
/// input variables (`var.x`), its local values (`local.x`), the arguments of the resources
/// it declares (`azurerm_resource_group.rg.location`) in any file of the module folder (a
/// folder is one module), and inside a `count` or `for_each` instance `count.index`,
/// `each.key` and `each.value`.
///
/// A reference is a traversal: `var.pool.vm_size`, `local.pools["gpu"]`, `var.zones[0]`.
///
/// Variables take Terraform's precedence, lowest first: `variable` block defaults,
/// `terraform.tfvars`, `terraform.tfvars.json`, `*.auto.tfvars` and `*.auto.tfvars.json` in
/// lexical order of the file name; later calls to [`TerraformVariables::add_tfvars`] win, so
/// add in that order ([`tfvars_precedence`] gives it). Variable values that are themselves
/// expressions (`${...}`) are ignored: they are not known before `terraform plan`. Locals and
/// resources are added last, with [`TerraformVariables::add_module`].
#[derive(Clone, Debug, Default)]
pub struct TerraformVariables {
    values: Map<String, Value>,
    /// `local.NAME`, resolved as far as known (parts may still be `${...}` of this module).
    locals: Map<String, Value>,
    /// `TYPE.NAME` of each resource written without `count` or `for_each`: its arguments,
    /// resolved as far as known.
    resources: Map<String, Value>,
}

/// Most instances a `count` or `for_each` block is expanded into; a larger collection leaves
/// the block as written, so what depends on the instance stays unresolved.
pub const MAX_INSTANCES: usize = 256;

/// Rounds of resolving locals and resource arguments that refer to each other.
const MAX_ROUNDS: usize = 8;

/// Largest value, in JSON nodes, a local or a resource may grow to while resolved (a local
/// that refers to itself twice would double each round).
const MAX_VALUE_NODES: usize = 10_000;

/// First names of a traversal that are not a resource type.
const NOT_RESOURCES: &[&str] = &[
    "var",
    "local",
    "each",
    "count",
    "data",
    "module",
    "path",
    "terraform",
    "self",
];

/// The instance of a `count` or `for_each` block an expression is evaluated in.
#[derive(Clone, Copy)]
enum Instance<'a> {
    None,
    Each { key: &'a str, value: &'a Value },
    Count(u64),
}

/// An owned [`Instance`], with its address suffix (`["a100"]`, `[0]`).
enum Expanded {
    Each(String, Value),
    Count(u64),
}

impl Expanded {
    fn instance(&self) -> Instance<'_> {
        match self {
            Expanded::Each(key, value) => Instance::Each { key, value },
            Expanded::Count(i) => Instance::Count(*i),
        }
    }

    /// The index part of the instance's address: `["a100"]` or `[0]`.
    fn suffix(&self) -> String {
        match self {
            Expanded::Each(key, _) => format!("[{}]", Value::String(key.clone())),
            Expanded::Count(i) => format!("[{i}]"),
        }
    }
}

impl TerraformVariables {
    /// Adds the `default` of every `variable` block of a configuration (decoded `.tf` or
    /// `.tf.json`), without replacing values set earlier.
    pub fn add_defaults(&mut self, config: &Value) {
        for (name, block) in labelled_blocks(config, "variable") {
            if let Some(default) = block.get("default")
                && is_known(default)
            {
                self.values
                    .entry(name.to_owned())
                    .or_insert_with(|| default.clone());
            }
        }
    }

    /// Adds the assignments of a variable definitions file (decoded `.tfvars` or
    /// `.tfvars.json`), replacing earlier values.
    pub fn add_tfvars(&mut self, tfvars: &Value) {
        if let Value::Object(map) = tfvars {
            for (name, value) in map {
                if is_known(value) {
                    self.values.insert(name.clone(), value.clone());
                }
            }
        }
    }

    /// Adds the assignments of a `-var-file` (decoded) for the variables `declared` names
    /// only: a scan applies `--var-file` to every module folder it checks, and a value for
    /// a variable a folder does not declare is not that folder's.
    pub fn add_var_file(&mut self, tfvars: &Value, declared: &HashSet<&str>) {
        if let Value::Object(map) = tfvars {
            for (name, value) in map {
                if declared.contains(name.as_str()) && is_known(value) {
                    self.values.insert(name.clone(), value.clone());
                }
            }
        }
    }

    /// Adds the `locals` and the resources of a module's configuration files (decoded), each
    /// resolved with the variables added so far and with each other (a local that refers to
    /// a resource's argument, a resource's `location` that refers to another resource). Call
    /// once every variable is added.
    pub fn add_module<'c>(&mut self, configs: impl IntoIterator<Item = &'c Value>) {
        let mut locals: Vec<(String, &Value)> = Vec::new();
        let mut resources: Vec<(String, &Value)> = Vec::new();
        for config in configs {
            for section in sections(config, "locals") {
                if let Value::Object(map) = section {
                    locals.extend(map.iter().map(|(k, v)| (k.clone(), v)));
                }
            }
            for section in sections(config, "resource") {
                for (ty, name, body) in named_bodies(section) {
                    if body.get("count").is_none() && body.get("for_each").is_none() {
                        resources.push((format!("{ty}.{name}"), body));
                    }
                }
            }
        }
        for _ in 0..MAX_ROUNDS {
            let mut changed = false;
            for (targets, entries) in [(0, &locals), (1, &resources)] {
                for (name, raw) in entries {
                    let mut value = (*raw).clone();
                    self.resolve(&mut value);
                    let map = if targets == 0 {
                        &mut self.locals
                    } else {
                        &mut self.resources
                    };
                    if node_count(&value, MAX_VALUE_NODES + 1) <= MAX_VALUE_NODES
                        && map.get(name) != Some(&value)
                    {
                        map.insert(name.clone(), value);
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// The known value of variable `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.get(name)
    }

    /// Number of variables with a known value.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether no variable has a known value.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Replaces references in every string of `config` and returns how many strings changed.
    ///
    /// A string that is exactly one reference (`${var.x}`, `${local.pools["gpu"].vm_size}`,
    /// `${azurerm_resource_group.rg.location}`) takes its value, whatever its type (so
    /// `tags = var.tags` becomes the map); a local or a resource argument that is itself an
    /// expression of the module is put in its place, so what stays unresolved names its
    /// cause. A template mixing text and references becomes a string when every
    /// interpolation is a known string, number or boolean. Anything else (function calls,
    /// `data.` and `module.` references, unknown variables, computed attributes such as
    /// `.id`, directives) is left as written, so policies see it as unresolved and stay
    /// silent.
    pub fn resolve(&self, config: &mut Value) -> usize {
        self.resolve_in(config, Instance::None)
    }

    /// Expands the `resource` and `module` blocks of `doc` that have a `count` or `for_each`
    /// whose collection is known into one block per instance, named as Terraform addresses
    /// it (`gpu["a100"]`, `gpu[0]`) and located where the block is written, with
    /// `each.key`, `each.value` and `count.index` resolved; then resolves the whole document
    /// ([`TerraformVariables::resolve`]). A block whose collection is not known (or has more
    /// than `MAX_INSTANCES` elements) stays as written: what depends on the instance stays
    /// unresolved. `count = 0` removes the block, as in Terraform.
    pub fn resolve_document(&self, doc: &mut Document) -> usize {
        let mut aliases = Vec::new();
        match doc.value.get_mut("resource") {
            Some(Value::Array(list)) => {
                for (i, section) in list.iter_mut().enumerate() {
                    if let Value::Object(types) = section {
                        for (ty, named) in types.iter_mut() {
                            let base = format!("/resource/{i}/{}", escape_key(ty));
                            self.expand(named, &base, &mut aliases);
                        }
                    }
                }
            }
            Some(Value::Object(types)) => {
                for (ty, named) in types.iter_mut() {
                    let base = format!("/resource/{}", escape_key(ty));
                    self.expand(named, &base, &mut aliases);
                }
            }
            _ => {}
        }
        match doc.value.get_mut("module") {
            Some(Value::Array(list)) => {
                for (i, named) in list.iter_mut().enumerate() {
                    self.expand(named, &format!("/module/{i}"), &mut aliases);
                }
            }
            Some(named) => self.expand(named, "/module", &mut aliases),
            None => {}
        }
        for (parent, key, target) in aliases {
            doc.positions.alias(&parent, key, &target);
        }
        self.resolve(&mut doc.value)
    }

    /// Expands the blocks of `named` (`NAME: body`, at the pointer `base`), recording the
    /// positions to alias: `(parent, instance name, block)`.
    fn expand(&self, named: &mut Value, base: &str, aliases: &mut Vec<(String, String, String)>) {
        let Value::Object(map) = named else {
            return;
        };
        let names: Vec<String> = map.keys().cloned().collect();
        for name in names {
            let Some(Value::Object(body)) = map.get(&name) else {
                continue;
            };
            let Some(instances) = self.instances(body) else {
                continue;
            };
            let mut body = body.clone();
            body.remove("count");
            body.remove("for_each");
            let target = format!("{base}/{}", escape_key(&name));
            for instance in instances {
                let mut value = Value::Object(body.clone());
                self.resolve_in(&mut value, instance.instance());
                let key = format!("{name}{}", instance.suffix());
                aliases.push((base.to_owned(), key.clone(), target.clone()));
                map.insert(key, value);
            }
            map.remove(&name);
        }
    }

    /// The instances of a block with a known `count` or `for_each`.
    fn instances(&self, body: &Map<String, Value>) -> Option<Vec<Expanded>> {
        if let Some(count) = body.get("count") {
            let mut count = count.clone();
            self.resolve(&mut count);
            let n = count.as_u64()?;
            if n > MAX_INSTANCES as u64 {
                return None;
            }
            return Some((0..n).map(Expanded::Count).collect());
        }
        let mut each = body.get("for_each")?.clone();
        // `toset(x)`: the set of the strings of a list.
        if let Some(inner) = each
            .as_str()
            .and_then(|s| s.strip_prefix("${toset("))
            .and_then(|s| s.strip_suffix(")}"))
        {
            each = match decode_hcl(&format!("v = {inner}")) {
                // A literal list, or a reference resolved below.
                Ok(doc) => doc.value.get("v").cloned().unwrap_or_default(),
                Err(_) => Value::Null,
            };
        }
        self.resolve(&mut each);
        let instances: Vec<Expanded> = match each {
            Value::Object(map) => map.into_iter().map(|(k, v)| Expanded::Each(k, v)).collect(),
            Value::Array(items) => {
                let mut keys = items
                    .iter()
                    .map(|v| v.as_str().filter(|s| is_known_text(s)).map(str::to_owned))
                    .collect::<Option<Vec<String>>>()?;
                keys.sort();
                keys.dedup();
                keys.into_iter()
                    .map(|k| Expanded::Each(k.clone(), Value::String(k)))
                    .collect()
            }
            _ => return None,
        };
        (instances.len() <= MAX_INSTANCES).then_some(instances)
    }

    fn resolve_in(&self, config: &mut Value, at: Instance<'_>) -> usize {
        match config {
            Value::String(s) => match self.substitute(s, at) {
                Some(value) => {
                    *config = value;
                    1
                }
                None => 0,
            },
            Value::Array(items) => items.iter_mut().map(|v| self.resolve_in(v, at)).sum(),
            Value::Object(map) => map.values_mut().map(|v| self.resolve_in(v, at)).sum(),
            _ => 0,
        }
    }

    fn substitute(&self, text: &str, at: Instance<'_>) -> Option<Value> {
        if !text.contains("${") {
            return None;
        }
        let parts = split_template(text)?;
        if let [Part::Ref(steps)] = parts.as_slice() {
            let value = self.lookup(steps, at)?;
            // The same expression again (a local defined as itself) is no progress.
            return (value.as_str() != Some(text)).then_some(value);
        }
        if !parts.iter().any(|p| matches!(p, Part::Ref(_))) {
            return None;
        }
        let mut out = String::new();
        for part in parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Ref(steps) => match self.lookup(&steps, at)? {
                    Value::String(s) if is_known_text(&s) => out.push_str(&s),
                    Value::Number(n) => out.push_str(&n.to_string()),
                    Value::Bool(b) => out.push_str(if b { "true" } else { "false" }),
                    _ => return None,
                },
            }
        }
        Some(Value::String(out))
    }

    /// The value a traversal refers to, if this module knows it.
    fn lookup(&self, steps: &[Step], at: Instance<'_>) -> Option<Value> {
        fn name(step: &Step) -> Option<&str> {
            match step {
                Step::Name(n) => Some(n),
                Step::Index(_) => None,
            }
        }
        let (first, second) = (name(steps.first()?)?, steps.get(1).and_then(name)?);
        let rest = steps.get(2..).unwrap_or_default();
        let root = match (first, second, at) {
            ("var", n, _) => self.values.get(n)?,
            ("local", n, _) => self.locals.get(n)?,
            ("count", "index", Instance::Count(i)) if rest.is_empty() => return Some(i.into()),
            ("each", "key", Instance::Each { key, .. }) if rest.is_empty() => {
                return Some(Value::String(key.to_owned()));
            }
            ("each", "value", Instance::Each { value, .. }) => value,
            (ty, n, _) if !rest.is_empty() && !NOT_RESOURCES.contains(&ty) => {
                self.resources.get(&format!("{ty}.{n}"))?
            }
            _ => return None,
        };
        let mut value = root;
        for step in rest {
            value = match (step, value) {
                (Step::Name(key), Value::Object(map)) => map.get(key)?,
                (Step::Index(i), Value::Array(items)) => items.get(*i)?,
                _ => return None,
            };
        }
        Some(value.clone())
    }
}

/// `NAME` when `expression` (JSON syntax) is exactly one reference to the input variable
/// `var.NAME` or to a part of it (`${var.pool.vm_size}`): what a user sets to resolve it.
pub fn variable_reference(expression: &str) -> Option<String> {
    match split_template(expression)?.as_slice() {
        [Part::Ref(steps)] => match steps.as_slice() {
            [Step::Name(root), Step::Name(name), ..] if root == "var" => Some(name.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Which variable definitions file Terraform loads on its own, and in which order: `Some(0)`
/// for `terraform.tfvars`, `Some(1)` for `terraform.tfvars.json`, `Some(2)` for `*.auto.tfvars`
/// and `*.auto.tfvars.json` (sort those by name), `None` for any other file (`-var-file` only).
pub fn tfvars_precedence(file_name: &str) -> Option<u8> {
    match file_name {
        "terraform.tfvars" => Some(0),
        "terraform.tfvars.json" => Some(1),
        name if name.ends_with(".auto.tfvars") || name.ends_with(".auto.tfvars.json") => Some(2),
        _ => None,
    }
}

/// `(name, body)` of every block `kind "name" { ... }` in a decoded configuration
/// (`variable`, `module`, ...), whether written once (an object) or repeated (an array of
/// objects).
pub fn labelled_blocks<'v>(config: &'v Value, kind: &str) -> Vec<(&'v str, &'v Value)> {
    let mut out = Vec::new();
    let mut visit = |section: &'v Value| {
        if let Value::Object(map) = section {
            for (name, body) in map {
                match body {
                    Value::Array(items) => out.extend(items.iter().map(|b| (name.as_str(), b))),
                    body => out.push((name.as_str(), body)),
                }
            }
        }
    };
    match config.get(kind) {
        Some(Value::Array(sections)) => sections.iter().for_each(&mut visit),
        Some(section) => visit(section),
        None => {}
    }
    out
}

/// The sections `kind` of a decoded configuration: one object, or each of an array.
fn sections<'v>(config: &'v Value, kind: &str) -> Vec<&'v Value> {
    match config.get(kind) {
        Some(Value::Array(list)) => list.iter().collect(),
        Some(section) => vec![section],
        None => Vec::new(),
    }
}

/// `(type, name, body)` of each block of a `resource` section written once.
fn named_bodies(section: &Value) -> Vec<(&str, &str, &Value)> {
    let mut out = Vec::new();
    if let Value::Object(types) = section {
        for (ty, named) in types {
            if let Value::Object(named) = named {
                for (name, body) in named {
                    if body.is_object() {
                        out.push((ty.as_str(), name.as_str(), body));
                    }
                }
            }
        }
    }
    out
}

/// Nodes of `value`, counted up to `limit`.
fn node_count(value: &Value, limit: usize) -> usize {
    let mut count = 0;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        count += 1;
        if count >= limit {
            return count;
        }
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    count
}

/// A value without expressions anywhere in it.
fn is_known(value: &Value) -> bool {
    match value {
        Value::String(s) => is_known_text(s),
        Value::Array(items) => items.iter().all(is_known),
        Value::Object(map) => map.values().all(is_known),
        _ => true,
    }
}

fn is_known_text(text: &str) -> bool {
    !text.contains("${") && !text.contains("%{")
}

/// One step of a traversal: `.name` or `["key"]`, or `[0]` (also the legacy `.0`).
#[derive(Debug, PartialEq)]
enum Step {
    Name(String),
    Index(usize),
}

enum Part<'t> {
    /// Literal text, as written in the JSON syntax (`$${` stays escaped).
    Text(&'t str),
    Ref(Vec<Step>),
}

/// Splits a JSON-syntax template into text and `${traversal}` parts; `None` when it holds
/// any other interpolation or a directive.
fn split_template(text: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while let Some(found) = text.get(at..)?.find(['$', '%']) {
        let from = at + found;
        let rest = text.get(from..)?;
        if rest.starts_with("$${") || rest.starts_with("%%{") {
            at = from + 3;
        } else if let Some(after) = rest.strip_prefix("${") {
            let end = after.find('}')?;
            let steps = traversal(after.get(..end)?)?;
            if from > start {
                parts.push(Part::Text(text.get(start..from)?));
            }
            parts.push(Part::Ref(steps));
            at = from + 2 + end + 1;
            start = at;
        } else if rest.starts_with("%{") {
            return None;
        } else {
            at = from + 1;
        }
    }
    if start < text.len() {
        parts.push(Part::Text(text.get(start..)?));
    }
    Some(parts)
}

/// A traversal (`var.pool.vm_size`, `local.pools["gpu"]`, `var.zones[0]`), as steps; `None`
/// for any other expression.
fn traversal(text: &str) -> Option<Vec<Step>> {
    let (first, mut rest) = identifier(text.trim())?;
    let mut steps = vec![Step::Name(first.to_owned())];
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let (name, after) = identifier(after)?;
            steps.push(match name.parse::<usize>() {
                Ok(i) if name.bytes().all(|b| b.is_ascii_digit()) => Step::Index(i),
                _ => Step::Name(name.to_owned()),
            });
            rest = after;
        } else if let Some(after) = rest.strip_prefix('[') {
            let after = after.trim_start();
            if let Some(quoted) = after.strip_prefix('"') {
                let end = quoted.find('"')?;
                let key = quoted.get(..end)?;
                if key.contains('\\') || key.contains("${") || key.contains("%{") {
                    return None;
                }
                steps.push(Step::Name(key.to_owned()));
                rest = quoted.get(end + 1..)?.trim_start().strip_prefix(']')?;
            } else {
                let end = after.find(']')?;
                let digits = after.get(..end)?.trim();
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                steps.push(Step::Index(digits.parse().ok()?));
                rest = after.get(end + 1..)?;
            }
        } else {
            return None;
        }
    }
    Some(steps)
}

/// A leading identifier of `text` and what follows it.
fn identifier(text: &str) -> Option<(&str, &str)> {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(text.len());
    (end > 0).then(|| text.split_at(end))
}

#[cfg(test)]
mod tests {
    use super::{TerraformVariables, decode_hcl, tfvars_precedence};
    use serde_json::json;

    const CLUSTER: &str = r#"# comment: vm_size = "Standard_ND96asr_v4" is not data
resource "azurerm_kubernetes_cluster" "main" {
  name     = var.cluster_name
  location = azurerm_resource_group.main.location

  default_node_pool {
    name       = "system"
    vm_size    = "Standard_D2s_v3" // trailing comment
    node_count = 2
  }

  tags = {
    "team" = "ml"
    env    = "${var.env}-cluster"
  }
}

resource "azurerm_kubernetes_cluster_node_pool" "gpu" {
  vm_size     = var.gpu_vm_size
  min_count   = 1
  node_taints = ["sku=gpu:NoSchedule"]
}

variable "gpu_vm_size" {
  default = "Standard_NC24ads_A100_v4"
}
"#;

    #[test]
    fn blocks_become_the_json_syntax_with_expressions_as_templates()
    -> Result<(), super::DecodeError> {
        let doc = decode_hcl(CLUSTER)?;
        let aks = &doc.value["resource"]["azurerm_kubernetes_cluster"]["main"];
        assert_eq!(aks["name"], "${var.cluster_name}");
        assert_eq!(aks["location"], "${azurerm_resource_group.main.location}");
        assert_eq!(aks["default_node_pool"]["vm_size"], "Standard_D2s_v3");
        assert_eq!(aks["default_node_pool"]["node_count"], 2);
        assert_eq!(
            aks["tags"],
            json!({"team": "ml", "env": "${var.env}-cluster"})
        );
        assert_eq!(
            doc.value["variable"]["gpu_vm_size"]["default"],
            "Standard_NC24ads_A100_v4"
        );
        assert!(!doc.value.to_string().contains("ND96asr"));
        Ok(())
    }

    #[test]
    fn every_attribute_is_located_at_its_key() -> Result<(), super::DecodeError> {
        let doc = decode_hcl(CLUSTER)?;
        let line = |pointer: &str| doc.positions.get(pointer).map(|s| (s.line, s.column));
        let pool = "/resource/azurerm_kubernetes_cluster/main/default_node_pool";
        assert_eq!(line(&format!("{pool}/vm_size")), Some((8, 5)));
        assert_eq!(line(&format!("{pool}/node_count")), Some((9, 5)));
        assert_eq!(
            line("/resource/azurerm_kubernetes_cluster_node_pool/gpu/min_count"),
            Some((20, 3))
        );
        assert_eq!(
            line("/resource/azurerm_kubernetes_cluster_node_pool/gpu/node_taints/0"),
            Some((21, 18))
        );
        assert_eq!(
            line("/resource/azurerm_kubernetes_cluster/main/tags/team"),
            Some((13, 5))
        );
        assert_eq!(
            line("/resource/azurerm_kubernetes_cluster/main"),
            Some((2, 39))
        );
        assert_eq!(line(""), Some((2, 1)), "the root skips the leading comment");
        Ok(())
    }

    #[test]
    fn repeated_nested_blocks_become_an_array() -> Result<(), super::DecodeError> {
        let doc = decode_hcl(
            "resource \"x\" \"y\" {\n  rule {\n    a = 1\n  }\n  rule {\n    a = 2\n  }\n}\n",
        )?;
        assert_eq!(
            doc.value["resource"]["x"]["y"]["rule"],
            json!([{"a": 1}, {"a": 2}])
        );
        assert_eq!(
            doc.positions.get("/resource/x/y/rule/1/a").map(|s| s.line),
            Some(6)
        );
        Ok(())
    }

    #[test]
    fn literal_dollar_braces_are_escaped_and_heredocs_dedented() -> Result<(), super::DecodeError> {
        let doc = decode_hcl("a = \"$${not}\"\nb = <<-EOF\n    x: ${var.y}\n    EOF\n")?;
        assert_eq!(doc.value["a"], "$${not}");
        assert_eq!(doc.value["b"], "x: ${var.y}\n");
        Ok(())
    }

    #[test]
    fn malformed_hcl_names_line_column_and_expectation() {
        let error = decode_hcl("resource \"x\" \"y\" {\n  a = [1,\n}\n").err();
        let error = error.map(|e| (e.line, e.message.syntax, e.message.to_string()));
        assert!(
            matches!(&error, Some((3, Some(crate::Syntax::Hcl), shown)) if shown.starts_with("invalid hcl: ")),
            "{error:?}"
        );
        let duplicate = decode_hcl("a = 1\na = 2\n").err().map(|e| e.line);
        assert_eq!(duplicate, Some(2));
        let mixed = decode_hcl("a = 1\na {\n}\n").err().map(|e| e.message);
        assert_eq!(
            mixed,
            Some(crate::Message {
                syntax: None,
                text: "`a` is both an attribute and a block: expected one or the other".into()
            })
        );
    }

    #[test]
    fn variables_resolve_defaults_then_tfvars() -> Result<(), super::DecodeError> {
        let mut doc = decode_hcl(CLUSTER)?;
        let mut vars = TerraformVariables::default();
        vars.add_defaults(&doc.value);
        vars.add_tfvars(&decode_hcl("cluster_name = \"aks\"\nenv = \"dev\"\nx = local.y\n")?.value);
        assert_eq!(
            vars.len(),
            3,
            "an expression in a tfvars file is not a value"
        );
        vars.resolve(&mut doc.value);
        let aks = &doc.value["resource"]["azurerm_kubernetes_cluster"]["main"];
        assert_eq!(aks["name"], "aks");
        assert_eq!(aks["tags"]["env"], "dev-cluster");
        assert_eq!(aks["location"], "${azurerm_resource_group.main.location}");
        assert_eq!(
            doc.value["resource"]["azurerm_kubernetes_cluster_node_pool"]["gpu"]["vm_size"],
            "Standard_NC24ads_A100_v4"
        );
        Ok(())
    }

    #[test]
    fn later_tfvars_win_and_unknown_references_stay() {
        let mut vars = TerraformVariables::default();
        vars.add_defaults(&json!({"variable": {"size": {"default": "a"}, "n": [{"default": 1}]}}));
        vars.add_tfvars(&json!({"size": "b"}));
        vars.add_tfvars(&json!({"size": "c", "map": {"k": "v"}}));
        let mut config = json!({
            "whole": "${var.size}", "count": "${ var.n }", "map": "${var.map}",
            "mixed": "${var.size}-${var.n}", "other": "${var.missing}", "fn": "${lower(var.size)}",
            "half": "${var.size}-${local.x}", "escaped": "$${var.size}", "directive": "%{if true}x%{endif}",
            "map_in_text": "x-${var.map}"
        });
        assert_eq!(vars.resolve(&mut config), 4);
        assert_eq!(
            config,
            json!({
                "whole": "c", "count": 1, "map": {"k": "v"}, "mixed": "c-1",
                "other": "${var.missing}", "fn": "${lower(var.size)}", "half": "${var.size}-${local.x}",
                "escaped": "$${var.size}", "directive": "%{if true}x%{endif}", "map_in_text": "x-${var.map}"
            })
        );
    }

    #[test]
    fn terraform_loads_only_its_own_tfvars_files() {
        assert_eq!(tfvars_precedence("terraform.tfvars"), Some(0));
        assert_eq!(tfvars_precedence("terraform.tfvars.json"), Some(1));
        assert_eq!(tfvars_precedence("gpu.auto.tfvars"), Some(2));
        assert_eq!(tfvars_precedence("prod.tfvars"), None);
    }

    #[test]
    fn object_attributes_locals_and_resources_of_other_files_resolve()
    -> Result<(), super::DecodeError> {
        let variables = decode_hcl(
            "variable \"pool\" {\n  default = { vm_size = \"Standard_NC6\", zones = [\"1\", \"2\"] }\n}\nvariable \"location\" { default = \"westeurope\" }\n",
        )?;
        let rg = decode_hcl(
            "resource \"azurerm_resource_group\" \"rg\" {\n  location = var.location\n}\nlocals {\n  pools = { gpu = { vm_size = var.pool.vm_size }, cpu = { vm_size = var.missing } }\n  where = azurerm_resource_group.rg.location\n}\n",
        )?;
        let mut main = decode_hcl(
            "resource \"t\" \"n\" {\n  location = azurerm_resource_group.rg.location\n  size = local.pools[\"gpu\"].vm_size\n  zone = var.pool.zones[1]\n  legacy = var.pool.zones.0\n  text = \"${local.where}-${var.pool.vm_size}\"\n  other = local.pools.cpu.vm_size\n  id = azurerm_resource_group.rg.id\n  data = data.azurerm_resource_group.x.location\n}\n",
        )?;
        let mut vars = TerraformVariables::default();
        vars.add_defaults(&variables.value);
        vars.add_module([&variables.value, &rg.value, &main.value]);
        vars.resolve(&mut main.value);
        assert_eq!(
            main.value["resource"]["t"]["n"],
            json!({
                "location": "westeurope", "size": "Standard_NC6", "zone": "2", "legacy": "1",
                "text": "westeurope-Standard_NC6",
                // The local's own expression takes its place: the cause is named.
                "other": "${var.missing}",
                "id": "${azurerm_resource_group.rg.id}",
                "data": "${data.azurerm_resource_group.x.location}"
            })
        );
        Ok(())
    }

    #[test]
    fn for_each_and_count_expand_into_named_instances_located_at_the_block()
    -> Result<(), super::DecodeError> {
        let text = r#"variable "pools" {
  default = {
    a100 = { vm_size = "Standard_NC24ads_A100_v4", min = 0 }
    v100 = { vm_size = "Standard_NC6s_v3", min = 1 }
  }
}
resource "p" "gpu" {
  for_each = var.pools
  name     = each.key
  vm_size  = each.value.vm_size
  min      = each.value.min
}
resource "p" "set" {
  for_each = toset(["b", "a", "b"])
  name     = "pool-${each.value}"
}
resource "p" "counted" {
  count = 2
  name  = "n${count.index}"
}
resource "p" "none" {
  count = 0
}
resource "p" "unknown" {
  for_each = var.elsewhere
  vm_size  = each.value.vm_size
}
module "m" {
  source   = "./m"
  for_each = var.pools
  size     = each.value.vm_size
}
"#;
        let mut doc = decode_hcl(text)?;
        let mut vars = TerraformVariables::default();
        vars.add_defaults(&doc.value);
        vars.resolve_document(&mut doc);
        let p = &doc.value["resource"]["p"];
        assert_eq!(
            p[r#"gpu["a100"]"#],
            json!({"name": "a100", "vm_size": "Standard_NC24ads_A100_v4", "min": 0})
        );
        assert_eq!(p[r#"gpu["v100"]"#]["vm_size"], "Standard_NC6s_v3");
        assert_eq!(p[r#"set["a"]"#]["name"], "pool-a");
        assert_eq!(p[r#"set["b"]"#]["name"], "pool-b");
        assert_eq!(p["counted[1]"]["name"], "n1");
        let names: Vec<&String> = p
            .as_object()
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        assert_eq!(names.len(), 7, "{names:?}");
        assert!(p.get("gpu").is_none() && p.get("none").is_none());
        assert_eq!(p["unknown"]["vm_size"], "${each.value.vm_size}");
        assert_eq!(
            doc.value["module"][r#"m["v100"]"#]["size"],
            "Standard_NC6s_v3"
        );
        let line = |pointer: &str| doc.positions.get(pointer).map(|s| s.line);
        assert_eq!(line(r#"/resource/p/gpu["v100"]/vm_size"#), Some(10));
        assert_eq!(line("/resource/p/counted[0]/name"), Some(19));
        assert_eq!(line(r#"/module/m["a100"]/size"#), Some(31));
        Ok(())
    }

    #[test]
    fn traversals_and_templates_are_split_strictly() {
        use super::{Step, traversal, variable_reference};
        assert_eq!(
            variable_reference("${var.pool.vm_size}").as_deref(),
            Some("pool")
        );
        assert_eq!(variable_reference("${ var.size }").as_deref(), Some("size"));
        for other in ["${local.x}", "x-${var.a}", "${lower(var.a)}", "var.a"] {
            assert_eq!(variable_reference(other), None, "{other}");
        }
        assert_eq!(
            traversal(r#" local.a["k x"][2].b "#),
            Some(vec![
                Step::Name("local".into()),
                Step::Name("a".into()),
                Step::Name("k x".into()),
                Step::Index(2),
                Step::Name("b".into())
            ])
        );
        for other in [
            "lower(var.a)",
            "var.a + 1",
            "var.a[var.b]",
            r#"var.a["\"x"]"#,
            "",
        ] {
            assert_eq!(traversal(other), None, "{other}");
        }
        // An escaped `$${` stays escaped in the text around a resolved reference.
        let vars = {
            let mut v = TerraformVariables::default();
            v.add_tfvars(&json!({"a": "x"}));
            v
        };
        let mut value = json!("$${keep}-${var.a}");
        vars.resolve(&mut value);
        assert_eq!(value, "$${keep}-x");
    }
}
