//! Source positions of the nodes of a document, looked up by JSON pointer.

use std::borrow::Cow;

/// 1-based line and column, plus byte offset, of a node in the source text.
///
/// Columns count characters (not bytes), as editors do; a byte order mark is not a column.
/// `offset` counts bytes from the start of the text, byte order mark included, so
/// `&text[offset..]` starts at the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
    /// Byte offset from the start of the text.
    pub offset: usize,
}

/// Positions of every node in one document, keyed by JSON pointer (`""` is the root).
///
/// A mapping entry is located at its key (so `/spec/nodeSelector/foo` points at `foo:`), a
/// sequence item at the item, the root at the document's first node. A node copied by a YAML
/// alias or merge key is located at the alias (or the `<<` key); its descendants are not
/// stored and [`Positions::locate`] resolves them to that location.
///
/// Stored as a tree of the nodes written in the source, so memory grows with the source and
/// not with the length of the pointers.
#[derive(Clone, Debug, Default)]
pub struct Positions {
    // INVARIANT: `nodes[0]` is the root when not empty; child indices point into `nodes`.
    nodes: Vec<Node>,
}

#[derive(Clone, Debug)]
struct Node {
    span: Span,
    /// Entries of a mapping, sorted by key once the document is finished.
    keys: Vec<(String, usize)>,
    /// Items of a sequence; the position in this list is the index in the array.
    items: Vec<usize>,
}

impl Positions {
    /// Exact position of the node at `pointer`, else the position of its nearest existing
    /// ancestor (e.g. a violation about a missing field points at the parent object).
    ///
    /// A pointer that is not valid RFC 6901 (it does not start with `/`) resolves to the
    /// root. Returns `None` only if there are no positions at all.
    pub fn locate(&self, pointer: &str) -> Option<Span> {
        let mut node = self.nodes.first()?;
        if let Some(rest) = pointer.strip_prefix('/') {
            for segment in rest.split('/') {
                match self.child(node, segment) {
                    Some(child) => node = child,
                    None => break,
                }
            }
        }
        Some(node.span)
    }

    /// Position of the node at `pointer`, only if that node itself was recorded.
    pub fn get(&self, pointer: &str) -> Option<Span> {
        let mut node = self.nodes.first()?;
        if pointer.is_empty() {
            return Some(node.span);
        }
        for segment in pointer.strip_prefix('/')?.split('/') {
            node = self.child(node, segment)?;
        }
        Some(node.span)
    }

    /// Number of recorded nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node was recorded.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn child(&self, node: &Node, segment: &str) -> Option<&Node> {
        let id = if node.items.is_empty() {
            let key = unescape(segment);
            let found = node
                .keys
                .binary_search_by(|(k, _)| k.as_str().cmp(&key))
                .ok()?;
            node.keys.get(found)?.1
        } else {
            *node.items.get(array_index(segment)?)?
        };
        self.nodes.get(id)
    }

    /// Records the root node; must be the first call.
    pub(crate) fn root(&mut self, span: Span) -> usize {
        self.push(span)
    }

    /// Records the entry `key` of the mapping `parent`, located at the key.
    pub(crate) fn key(&mut self, parent: usize, key: String, span: Span) -> usize {
        let id = self.push(span);
        if let Some(node) = self.nodes.get_mut(parent) {
            node.keys.push((key, id));
        }
        id
    }

    /// Records the next item of the sequence `parent`.
    pub(crate) fn item(&mut self, parent: usize, span: Span) -> usize {
        let id = self.push(span);
        if let Some(node) = self.nodes.get_mut(parent) {
            node.items.push(id);
        }
        id
    }

    /// Records the entry `key` of the mapping at `parent` as located where the node at
    /// `target` is, with the same descendants (a Terraform `count`/`for_each` instance is
    /// written once, in its block). Returns whether both pointers were recorded; an existing
    /// entry `key` is left alone.
    pub(crate) fn alias(&mut self, parent: &str, key: String, target: &str) -> bool {
        let (Some(parent), Some(target)) = (self.id(parent), self.id(target)) else {
            return false;
        };
        let Some(node) = self.nodes.get_mut(parent) else {
            return false;
        };
        match node.keys.binary_search_by(|(k, _)| k.as_str().cmp(&key)) {
            Ok(_) => false,
            Err(at) => {
                node.keys.insert(at, (key, target));
                true
            }
        }
    }

    /// Index of the node recorded at `pointer`.
    fn id(&self, pointer: &str) -> Option<usize> {
        let mut id = 0;
        self.nodes.first()?;
        if pointer.is_empty() {
            return Some(id);
        }
        for segment in pointer.strip_prefix('/')?.split('/') {
            let node = self.nodes.get(id)?;
            id = if node.items.is_empty() {
                let key = unescape(segment);
                let found = node
                    .keys
                    .binary_search_by(|(k, _)| k.as_str().cmp(&key))
                    .ok()?;
                node.keys.get(found)?.1
            } else {
                *node.items.get(array_index(segment)?)?
            };
        }
        Some(id)
    }

    /// Makes the keys searchable; call once every node is recorded.
    pub(crate) fn finish(&mut self) {
        for node in &mut self.nodes {
            node.keys.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
        }
    }

    fn push(&mut self, span: Span) -> usize {
        self.nodes.push(Node {
            span,
            keys: Vec::new(),
            items: Vec::new(),
        });
        self.nodes.len() - 1
    }
}

/// Escapes a mapping key as one JSON pointer segment (`~` → `~0`, `/` → `~1`).
pub fn escape_key(key: &str) -> Cow<'_, str> {
    if key.contains(['~', '/']) {
        Cow::Owned(key.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(key)
    }
}

/// Reverses [`escape_key`]: `~1` first, then `~0`, as RFC 6901 requires.
fn unescape(segment: &str) -> Cow<'_, str> {
    if segment.contains('~') {
        Cow::Owned(segment.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(segment)
    }
}

/// An array index segment: `0` or digits without a leading zero.
fn array_index(segment: &str) -> Option<usize> {
    let canonical = segment == "0"
        || (!segment.starts_with('0')
            && !segment.is_empty()
            && segment.bytes().all(|b| b.is_ascii_digit()));
    if canonical {
        segment.parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{Positions, Span, array_index, escape_key, unescape};

    fn span(line: u32) -> Span {
        Span {
            line,
            column: 1,
            offset: 0,
        }
    }

    #[test]
    fn escaping_round_trips_and_follows_rfc6901_order() {
        assert_eq!(escape_key("a/b~c"), "a~1b~0c");
        assert_eq!(unescape("a~1b~0c"), "a/b~c");
        // `~01` is an escaped `~` followed by `1`, not a `/`.
        assert_eq!(unescape("~01"), "~1");
    }

    #[test]
    fn array_indices_must_be_canonical() {
        assert_eq!(array_index("0"), Some(0));
        assert_eq!(array_index("12"), Some(12));
        assert_eq!(array_index("01"), None);
        assert_eq!(array_index("-1"), None);
        assert_eq!(array_index(""), None);
        assert_eq!(array_index("+1"), None);
    }

    #[test]
    fn locate_falls_back_to_nearest_ancestor_and_get_does_not() {
        let mut positions = Positions::default();
        assert_eq!(positions.locate(""), None);
        let root = positions.root(span(1));
        let spec = positions.key(root, "spec".into(), span(2));
        let items = positions.key(spec, "a/b".into(), span(3));
        positions.item(items, span(4));
        positions.finish();

        assert_eq!(positions.get("/spec/a~1b/0"), Some(span(4)));
        assert_eq!(positions.get("/spec/a~1b/1"), None);
        assert_eq!(positions.locate("/spec/a~1b/1"), Some(span(3)));
        assert_eq!(positions.locate("/spec/missing/deeper"), Some(span(2)));
        assert_eq!(positions.locate("/other"), Some(span(1)));
        assert_eq!(positions.locate("not-a-pointer"), Some(span(1)));
        assert_eq!(positions.get("not-a-pointer"), None);
        assert_eq!(positions.len(), 4);
    }
}
