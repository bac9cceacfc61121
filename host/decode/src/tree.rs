//! A decoded node tree with spans, for decoders that build their value before writing it out
//! (HCL joins repeated blocks, Bicep resolves declarations), and its conversion to a value
//! plus [`Positions`].

use serde_json::{Map, Value};

use crate::Span;
use crate::positions::Positions;

/// A node and where it was written.
pub(crate) struct Node {
    pub(crate) span: Span,
    pub(crate) kind: Kind,
}

pub(crate) enum Kind {
    Scalar(Value),
    Array(Vec<Node>),
    /// Entries in source order: key, where the key was written, value.
    Object(Vec<(String, Span, Node)>),
}

impl Node {
    /// The value of the tree and the position of every node (entries at their key).
    pub(crate) fn into_value(self) -> (Value, Positions) {
        let mut positions = Positions::default();
        let root = positions.root(self.span);
        let value = emit(self, root, &mut positions);
        positions.finish();
        (value, positions)
    }
}

/// Writes a node out as a value, recording positions under `id`.
fn emit(node: Node, id: usize, positions: &mut Positions) -> Value {
    match node.kind {
        Kind::Scalar(value) => value,
        Kind::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| {
                    let child = positions.item(id, item.span);
                    emit(item, child, positions)
                })
                .collect(),
        ),
        Kind::Object(entries) => {
            let mut map = Map::new();
            for (key, key_span, node) in entries {
                let child = positions.key(id, key.clone(), key_span);
                let value = emit(node, child, positions);
                map.insert(key, value);
            }
            Value::Object(map)
        }
    }
}
