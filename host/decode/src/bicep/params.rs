//! `.bicepparam` files: `using 'main.bicep'` and `param name = value` assignments (plus the
//! `var`s they may use), read into the shape of an ARM parameters file.
//!
//! The Bicep grammar has no `param name = value` without a type, so each `param` keyword
//! that starts a statement is read as `var` (the same number of bytes, so every position
//! stays where it was written) and the file is translated as Bicep. Values keep the ARM
//! expression form of the Bicep translation: `'a${v}'` is `[concat('a', variables('v'))]`,
//! which the caller evaluates with the file's variables.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use super::{Ctx, child_of, children, syntax_error};
use crate::text::LineIndex;
use crate::tree::Node;
use crate::{DecodeError, Document, Syntax};

/// A decoded `.bicepparam` file.
#[derive(Clone, Debug)]
pub struct BicepParams {
    /// The template the values are for, as written after `using` (`main.bicep`,
    /// `br/public:...`); `None` for `using none` or a file without `using`.
    pub using: Option<String>,
    /// `{"parameters": {name: {"value": V}}, "variables": {name: V}}` with the position of
    /// every node: the values (literals, or `[ARM expression]` strings over `variables`),
    /// and the variables they may refer to (every `var` and every `param` of the file).
    pub document: Document,
}

/// Decodes a `.bicepparam` file.
///
/// # Errors
///
/// Text that is not valid Bicep parameters: the line and column of the first syntax error.
pub fn decode_bicepparam(text: &str) -> Result<BicepParams, DecodeError> {
    let (body, base) = match text.strip_prefix('\u{feff}') {
        Some(rest) => (rest, text.len() - rest.len()),
        None => (text, 0),
    };
    let (rewritten, params_at) = params_as_vars(body);
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_bicep::LANGUAGE.into())
        .map_err(|e| {
            DecodeError::invalid(Syntax::Bicep, 1, 1, format!("grammar unavailable: {e}"))
        })?;
    let tree = parser
        .parse(&rewritten, None)
        .ok_or_else(|| DecodeError::invalid(Syntax::Bicep, 1, 1, "the parser gave up"))?;
    let lines = LineIndex::new(&rewritten, base);
    let root = tree.root_node();
    if root.has_error() {
        return Err(syntax_error(root, &rewritten, &lines));
    }
    let mut ctx = Ctx {
        text: &rewritten,
        lines: &lines,
        params: BTreeSet::new(),
        vars: BTreeSet::new(),
        names: BTreeMap::new(),
        loops: RefCell::new(Vec::new()),
    };
    ctx.declare(root);
    let at = ctx.span(root);
    let mut using = None;
    let mut params = Node::object(at);
    let mut vars = Node::object(at);
    for st in children(root) {
        match st.kind() {
            "using_statement" => {
                using = child_of(st, "string").and_then(|s| ctx.string_literal(s));
            }
            "variable_declaration" => {
                let parts = children(st);
                let (Some(id), Some(v)) = (parts.first(), parts.get(1)) else {
                    continue;
                };
                let name = ctx.src(*id);
                let value = ctx.value(*v);
                if params_at.contains(&st.start_byte()) {
                    let mut p = Node::object(ctx.span(st));
                    p.set("value", value.span, ctx.value(*v));
                    params.set(name, ctx.span(*id), p);
                }
                vars.set(name, ctx.span(*id), value);
            }
            _ => {}
        }
    }
    let mut doc = Node::object(at);
    doc.set("parameters", at, params);
    doc.set("variables", at, vars);
    let (value, positions) = doc.into_value();
    Ok(BicepParams {
        using: using.filter(|u| u != "none"),
        document: Document {
            index: 0,
            value,
            positions,
        },
    })
}

/// `text` with each statement-starting `param` keyword written `var  ` (same length) and
/// `using none` blanked, and the byte offsets of the `param` statements.
fn params_as_vars(text: &str) -> (String, BTreeSet<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut at = BTreeSet::new();
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start().len();
        let rest = &line[indent..];
        let keyword = rest
            .strip_prefix("param")
            .is_some_and(|after| after.starts_with([' ', '\t']));
        if rest.trim_end() == "using none" {
            // Not in the grammar: blanked (the file is for no template file).
            out.push_str(&" ".repeat(line.trim_end().len()));
            out.push_str(&line[line.trim_end().len()..]);
        } else if keyword {
            at.insert(out.len() + indent);
            out.push_str(&line[..indent]);
            out.push_str("var  ");
            out.push_str(&rest[5..]);
        } else {
            out.push_str(line);
        }
    }
    (out, at)
}

#[cfg(test)]
mod tests {
    use super::decode_bicepparam;

    #[test]
    fn using_params_and_vars_keep_their_positions() -> Result<(), Box<dyn std::error::Error>> {
        let text = "\
using './main.bicep'
// param commented = 'Standard_NC6' is not data
var prefix = 'Standard_'
param gpuSize = '${prefix}NC6'
  param pool = { count: 2, zones: ['1'] }
param plain = 'Standard_ND96asr_v4'
";
        let p = decode_bicepparam(text)?;
        assert_eq!(p.using.as_deref(), Some("./main.bicep"));
        let v = &p.document.value;
        assert!(v["parameters"].get("commented").is_none());
        assert_eq!(
            v["parameters"]["gpuSize"]["value"],
            "[concat(variables('prefix'), 'NC6')]"
        );
        assert_eq!(v["parameters"]["pool"]["value"]["count"], 2);
        assert_eq!(v["parameters"]["plain"]["value"], "Standard_ND96asr_v4");
        assert_eq!(v["variables"]["prefix"], "Standard_");
        assert!(v["parameters"].get("prefix").is_none());
        let at = |ptr: &str| p.document.positions.get(ptr).map(|s| (s.line, s.column));
        assert_eq!(at("/parameters/gpuSize/value"), Some((4, 17)));
        assert_eq!(at("/parameters/pool"), Some((5, 9)));
        Ok(())
    }

    proptest::proptest! {
        /// Any near-Bicep-parameters text decodes or fails with an error; it never panics.
        #[test]
        fn decoding_never_panics(text in "(using|param|var|none|[a-z]{1,4}|'[^']{0,6}'|\\$\\{|[{}()\\[\\]:=.,]|[0-9]{1,3}| |\t|\n|//[a-z ]{0,5}\n|é){0,40}") {
            let _ = decode_bicepparam(&text);
        }
    }

    #[test]
    fn using_none_and_syntax_errors() {
        let p = decode_bicepparam("using none\nparam a = 1\n").ok();
        assert_eq!(p.map(|p| p.using), Some(None));
        let err = decode_bicepparam("using 'main.bicep'\nparam a = {\n").err();
        assert!(err.is_some_and(|e| e.line >= 2));
    }
}
