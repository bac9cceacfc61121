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
use crate::{DecodeError, Document, Span, Syntax};

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

/// Values of a module's input variables, to replace `var.x` references before policies run.
///
/// Terraform's precedence, lowest first: `variable` block defaults, `terraform.tfvars`,
/// `terraform.tfvars.json`, `*.auto.tfvars` and `*.auto.tfvars.json` in lexical order of the
/// file name; later calls to [`TerraformVariables::add_tfvars`] win, so add in that order
/// ([`tfvars_precedence`] gives it). Values that are themselves expressions (`${...}`) are
/// ignored: they are not known before `terraform plan`.
#[derive(Clone, Debug, Default)]
pub struct TerraformVariables {
    values: Map<String, Value>,
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

    /// Replaces references to known variables in every string of `config` and returns how
    /// many strings changed.
    ///
    /// A string that is exactly `${var.x}` takes the variable's value, whatever its type (so
    /// `tags = var.tags` becomes the map). A template mixing text and `${var.x}` becomes a
    /// string when every interpolation is a known variable with a string, number or boolean
    /// value. Anything else (`local.`, resource attributes, function calls, unknown variables,
    /// directives) is left as written, so policies see it as unresolved and stay silent.
    pub fn resolve(&self, config: &mut Value) -> usize {
        if self.values.is_empty() {
            return 0;
        }
        match config {
            Value::String(s) => match self.substitute(s) {
                Some(value) => {
                    *config = value;
                    1
                }
                None => 0,
            },
            Value::Array(items) => items.iter_mut().map(|v| self.resolve(v)).sum(),
            Value::Object(map) => map.values_mut().map(|v| self.resolve(v)).sum(),
            _ => 0,
        }
    }

    fn substitute(&self, text: &str) -> Option<Value> {
        if !text.contains("${") {
            return None;
        }
        let parts = split_template(text)?;
        if let [Part::Var(name)] = parts.as_slice() {
            return self.values.get(*name).cloned();
        }
        if !parts.iter().any(|p| matches!(p, Part::Var(_))) {
            return None;
        }
        let mut out = String::new();
        for part in parts {
            match part {
                Part::Text(t) => out.push_str(&t),
                Part::Var(name) => match self.values.get(name)? {
                    Value::String(s) => out.push_str(s),
                    Value::Number(n) => out.push_str(&n.to_string()),
                    Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                    _ => return None,
                },
            }
        }
        Some(Value::String(out))
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

/// A value without expressions anywhere in it.
fn is_known(value: &Value) -> bool {
    match value {
        Value::String(s) => !s.contains("${") && !s.contains("%{"),
        Value::Array(items) => items.iter().all(is_known),
        Value::Object(map) => map.values().all(is_known),
        _ => true,
    }
}

enum Part<'t> {
    Text(String),
    Var(&'t str),
}

/// Splits a JSON-syntax template into text and `${var.NAME}` parts; `None` when it holds
/// any other interpolation or a directive.
fn split_template(text: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(['$', '%']) {
        let (before, from) = rest.split_at(at);
        literal.push_str(before);
        if let Some(after) = from.strip_prefix("$${") {
            literal.push_str("${");
            rest = after;
        } else if let Some(after) = from.strip_prefix("%%{") {
            literal.push_str("%{");
            rest = after;
        } else if let Some(after) = from.strip_prefix("${") {
            let end = after.find('}')?;
            let inner = after.get(..end)?.trim();
            let name = inner.strip_prefix("var.")?;
            let valid = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !valid {
                return None;
            }
            if !literal.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut literal)));
            }
            parts.push(Part::Var(name));
            rest = after.get(end + 1..)?;
        } else if from.starts_with("%{") {
            return None;
        } else {
            literal.push_str(from.get(..1)?);
            rest = from.get(1..)?;
        }
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        parts.push(Part::Text(literal));
    }
    Some(parts)
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
}
