//! YAML streams to JSON documents, built from `saphyr-parser` events.

use std::borrow::Cow;
use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Tag};
use serde_json::{Map, Value};

use crate::positions::Positions;
use crate::scalar::{NotFinite, resolve_plain};
use crate::text::{ByteOffsets, to_u32};
use crate::{DecodeError, Document, MAX_ALIAS_BYTES, MAX_DEPTH, MAX_NODES, Span, Syntax};

/// Decodes every document of a YAML stream.
///
/// Documents that are empty or `null` (such as the one after a trailing `---`) are skipped,
/// but [`Document::index`] still counts them. Scalars are typed with the YAML 1.2 core schema;
/// quoted and block scalars, and scalars tagged `!!str` or `!`, are strings; other tags are
/// ignored. Mapping keys are the text written in the source. Aliases are expanded, and `<<`
/// merge keys (`<<: *base`, `<<: [*a, *b]`) copy the entries that the mapping does not set
/// itself, earlier sources winning over later ones.
///
/// # Errors
///
/// Syntax errors (`invalid yaml: ...`), duplicate keys, keys that are sequences or mappings,
/// malformed merges, plain scalars that are numbers out of range (`1e309`: `number out of
/// range: ...`), and documents over [`MAX_DEPTH`], [`MAX_NODES`] or [`MAX_ALIAS_BYTES`].
pub fn decode_yaml(text: &str) -> Result<Vec<Document>, DecodeError> {
    let offsets = ByteOffsets::new(text);
    let mut builder = Builder::new(&offsets);
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|error| scan_error(&error, &offsets, text))?;
        let at = builder.span(span.start);
        builder.on_event(event, at)?;
    }
    Ok(builder.documents)
}

fn scan_error(error: &ScanError, offsets: &ByteOffsets<'_>, text: &str) -> DecodeError {
    let span = span_of(*error.marker(), offsets);
    // The scanner reports a tab at the start of the token it was reading (often the line
    // before); the user needs the tab's own line and column.
    if error.info().contains("found a tab")
        && let Some(tab) = text.get(span.offset..).and_then(|rest| rest.find('\t'))
    {
        let at = span.offset + tab;
        let before = &text[..at];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = text[line_start..at].chars().count() + 1;
        return DecodeError::invalid(
            Syntax::Yaml,
            to_u32(line),
            to_u32(column),
            "a tab character: YAML indents with spaces only, and a tab cannot start or sit in this value; use spaces",
        );
    }
    let message = match error.info() {
        // The scanner counts flow levels in a `u8`.
        "recursion limit exceeded" => {
            "nesting too deep: expected at most 255 levels of `[` and `{`"
        }
        info => info,
    };
    DecodeError::invalid_at(Syntax::Yaml, span, message)
}

fn span_of(marker: saphyr_parser::Marker, offsets: &ByteOffsets<'_>) -> Span {
    Span {
        line: to_u32(marker.line()),
        column: to_u32(marker.col().saturating_add(1)),
        offset: offsets.byte_offset(marker.index()),
    }
}

/// What a subtree costs, to enforce the limits when it is copied.
#[derive(Clone, Copy, Debug, Default)]
struct Cost {
    /// Scalars, sequences and mappings in the subtree.
    nodes: usize,
    /// Bytes of keys and strings in the subtree.
    bytes: usize,
    /// Levels of collections: 0 for a scalar.
    height: usize,
}

impl Cost {
    fn scalar(value: &Value) -> Self {
        Self {
            nodes: 1,
            bytes: value.as_str().map_or(0, str::len),
            height: 0,
        }
    }

    fn absorb(&mut self, child: Self) {
        self.nodes = self.nodes.saturating_add(child.nodes);
        self.bytes = self.bytes.saturating_add(child.bytes);
        self.height = self.height.max(child.height);
    }
}

/// What the whole stream has produced so far, against [`MAX_NODES`] and [`MAX_ALIAS_BYTES`].
#[derive(Default)]
struct Budget {
    nodes: usize,
    copied_bytes: usize,
}

impl Budget {
    /// Accounts for one node written in the source.
    fn produce(&mut self, at: Span) -> Result<(), DecodeError> {
        self.add_nodes(1, at)
    }

    /// Accounts for a copy of a subtree (an alias, or the copy kept for an anchor).
    fn copy(&mut self, cost: Cost, at: Span) -> Result<(), DecodeError> {
        self.add_nodes(cost.nodes, at)?;
        self.copied_bytes = self.copied_bytes.saturating_add(cost.bytes);
        if self.copied_bytes > MAX_ALIAS_BYTES {
            return Err(DecodeError::at(
                at,
                format!(
                    "aliases copy too much text: expected at most {MAX_ALIAS_BYTES} bytes of \
                     keys and strings copied by aliases"
                ),
            ));
        }
        Ok(())
    }

    fn add_nodes(&mut self, nodes: usize, at: Span) -> Result<(), DecodeError> {
        self.nodes = self.nodes.saturating_add(nodes);
        if self.nodes > MAX_NODES {
            return Err(DecodeError::at(
                at,
                format!(
                    "too many nodes: expected at most {MAX_NODES} scalars, sequences and \
                     mappings after expanding aliases"
                ),
            ));
        }
        Ok(())
    }
}

/// A value an anchor points to.
struct Anchored {
    value: Value,
    cost: Cost,
    /// The source text when the anchored node is a scalar, used when an alias is a key.
    text: Option<String>,
}

/// The document being built.
struct DocState {
    index: usize,
    positions: Positions,
    root: Option<Value>,
}

/// A sequence or mapping being built.
struct Frame {
    kind: Kind,
    /// Anchor id of the collection, 0 for none.
    anchor: usize,
    /// Its node in [`Positions`]; `None` when its children are not recorded (inside a merge).
    pos: Option<usize>,
    /// Cost of the children so far.
    cost: Cost,
}

enum Kind {
    Seq(Vec<Value>),
    Map(MapFrame),
}

#[derive(Default)]
struct MapFrame {
    map: Map<String, Value>,
    pending: Pending,
    /// Mappings named by the `<<` key, in order of priority.
    merges: Vec<Map<String, Value>>,
    /// Where the `<<` key is: merged entries are located there.
    merge_at: Option<Span>,
}

/// What the next node of a mapping is.
#[derive(Default)]
enum Pending {
    /// A key.
    #[default]
    Key,
    /// The value of `key`, recorded as node `pos` in [`Positions`].
    Value { key: String, pos: Option<usize> },
    /// The value of the `<<` merge key.
    Merge,
}

struct Builder<'t> {
    offsets: &'t ByteOffsets<'t>,
    documents: Vec<Document>,
    /// Documents started so far, empty ones included.
    started: usize,
    doc: Option<DocState>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchored>,
    budget: Budget,
}

impl<'t> Builder<'t> {
    fn new(offsets: &'t ByteOffsets<'t>) -> Self {
        Self {
            offsets,
            documents: Vec::new(),
            started: 0,
            doc: None,
            stack: Vec::new(),
            anchors: HashMap::new(),
            budget: Budget::default(),
        }
    }

    fn span(&self, marker: saphyr_parser::Marker) -> Span {
        span_of(marker, self.offsets)
    }

    fn on_event(&mut self, event: Event<'_>, at: Span) -> Result<(), DecodeError> {
        match event {
            Event::Nothing | Event::StreamStart | Event::StreamEnd => Ok(()),
            Event::DocumentStart(_) => {
                self.start_document();
                Ok(())
            }
            Event::DocumentEnd => {
                self.end_document();
                Ok(())
            }
            Event::Scalar(text, style, anchor, tag) => self.scalar(text, style, anchor, tag, at),
            Event::Alias(id) => self.alias(id, at),
            Event::SequenceStart(anchor, _) => self.start(Kind::Seq(Vec::new()), anchor, at),
            Event::MappingStart(anchor, _) => {
                self.start(Kind::Map(MapFrame::default()), anchor, at)
            }
            Event::SequenceEnd | Event::MappingEnd => self.end(at),
        }
    }

    fn start_document(&mut self) {
        // Anchors are scoped to their document.
        self.anchors.clear();
        self.stack.clear();
        self.doc = Some(DocState {
            index: self.started,
            positions: Positions::default(),
            root: None,
        });
        self.started += 1;
    }

    fn end_document(&mut self) {
        let Some(doc) = self.doc.take() else {
            return;
        };
        match doc.root {
            None | Some(Value::Null) => {}
            Some(value) => {
                let mut positions = doc.positions;
                positions.finish();
                self.documents.push(Document {
                    index: doc.index,
                    value,
                    positions,
                });
            }
        }
    }

    fn doc(&mut self) -> &mut DocState {
        // The parser always starts a document first; stay total if it did not.
        let started = &mut self.started;
        self.doc.get_or_insert_with(|| {
            let index = *started;
            *started += 1;
            DocState {
                index,
                positions: Positions::default(),
                root: None,
            }
        })
    }

    /// Whether the next node is the key of the innermost mapping.
    fn expects_key(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame {
                kind: Kind::Map(MapFrame {
                    pending: Pending::Key,
                    ..
                }),
                ..
            })
        )
    }

    fn scalar(
        &mut self,
        text: Cow<'_, str>,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<Cow<'_, Tag>>,
        at: Span,
    ) -> Result<(), DecodeError> {
        let value = match (style, tag.as_deref()) {
            (ScalarStyle::Plain, None) => resolve_plain(&text),
            (ScalarStyle::Plain, Some(tag)) if !forces_string(tag) => resolve_plain(&text),
            _ => Ok(Value::String(text.to_string())),
        };
        if self.expects_key() {
            // A key is its text (`1e309: x` is the key "1e309").
            let value = value.unwrap_or_else(|_| Value::String(text.to_string()));
            let merge = style == ScalarStyle::Plain && tag.is_none() && text == "<<";
            if anchor != 0 {
                let cost = Cost::scalar(&value);
                self.anchor(anchor, value, cost, Some(text.to_string()), at)?;
            }
            return self.key(text.into_owned(), merge, at);
        }
        let value = value.map_err(|_| DecodeError::at(at, NotFinite::MESSAGE))?;
        self.budget.produce(at)?;
        self.record(at);
        let cost = Cost::scalar(&value);
        self.place(value, cost, anchor, at)
    }

    fn alias(&mut self, id: usize, at: Span) -> Result<(), DecodeError> {
        let Some(anchored) = self.anchors.get(&id) else {
            return Err(DecodeError::at(
                at,
                "unknown anchor: expected `&name` earlier in the same document",
            ));
        };
        if self.expects_key() {
            let key = match (&anchored.text, &anchored.value) {
                (Some(text), _) => text.clone(),
                (None, Value::String(s)) => s.clone(),
                (None, Value::Array(_) | Value::Object(_)) => {
                    return Err(DecodeError::at(
                        at,
                        "expected a scalar as mapping key, found an alias to a collection",
                    ));
                }
                (None, scalar) => scalar.to_string(),
            };
            return self.key(key, false, at);
        }
        let (value, cost) = (anchored.value.clone(), anchored.cost);
        if self.stack.len().saturating_add(cost.height) > MAX_DEPTH {
            return Err(depth_error(at));
        }
        self.budget.copy(cost, at)?;
        self.record(at);
        self.place(value, cost, 0, at)
    }

    fn start(&mut self, kind: Kind, anchor: usize, at: Span) -> Result<(), DecodeError> {
        if self.expects_key() {
            let found = match kind {
                Kind::Seq(_) => "a sequence",
                Kind::Map(_) => "a mapping",
            };
            return Err(DecodeError::at(
                at,
                format!("expected a scalar as mapping key, found {found}"),
            ));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(depth_error(at));
        }
        self.budget.produce(at)?;
        let pos = self.record(at);
        self.stack.push(Frame {
            kind,
            anchor,
            pos,
            cost: Cost::default(),
        });
        Ok(())
    }

    fn end(&mut self, at: Span) -> Result<(), DecodeError> {
        let Some(frame) = self.stack.pop() else {
            return Err(DecodeError::invalid_at(
                Syntax::Yaml,
                at,
                "unbalanced end of collection",
            ));
        };
        let value = match frame.kind {
            Kind::Seq(items) => Value::Array(items),
            Kind::Map(MapFrame {
                mut map,
                merges,
                merge_at,
                ..
            }) => {
                for source in merges {
                    for (key, value) in source {
                        if map.contains_key(&key) {
                            continue;
                        }
                        if let (Some(parent), Some(merge_at)) = (frame.pos, merge_at) {
                            self.doc().positions.key(parent, key.clone(), merge_at);
                        }
                        map.insert(key, value);
                    }
                }
                Value::Object(map)
            }
        };
        let cost = Cost {
            nodes: frame.cost.nodes.saturating_add(1),
            bytes: frame.cost.bytes,
            height: frame.cost.height.saturating_add(1),
        };
        self.place(value, cost, frame.anchor, at)
    }

    /// Records the position of the node starting at `at` and returns its node in
    /// [`Positions`], unless it is not recorded.
    fn record(&mut self, at: Span) -> Option<usize> {
        let parent = match self.stack.last() {
            None => return Some(self.doc().positions.root(at)),
            Some(frame) => frame,
        };
        match (&parent.kind, parent.pos) {
            (Kind::Seq(_), Some(pos)) => Some(self.doc().positions.item(pos, at)),
            // A mapping value shares the node of its key.
            (Kind::Map(MapFrame { pending, .. }), _) => match pending {
                Pending::Value { pos, .. } => *pos,
                Pending::Key | Pending::Merge => None,
            },
            (Kind::Seq(_), None) => None,
        }
    }

    /// Handles a key of the innermost mapping.
    fn key(&mut self, key: String, merge: bool, at: Span) -> Result<(), DecodeError> {
        let Some(Frame {
            kind: Kind::Map(frame),
            pos,
            ..
        }) = self.stack.last_mut()
        else {
            return Err(DecodeError::invalid_at(
                Syntax::Yaml,
                at,
                "key outside of a mapping",
            ));
        };
        if merge {
            if frame.merge_at.is_some() {
                return Err(DecodeError::at(at, "duplicate key `<<`"));
            }
            frame.merge_at = Some(at);
            frame.pending = Pending::Merge;
            return Ok(());
        }
        if frame.map.contains_key(&key) {
            return Err(DecodeError::at(at, format!("duplicate key `{key}`")));
        }
        let parent = *pos;
        let node = match (parent, self.doc.as_mut()) {
            (Some(parent), Some(doc)) => Some(doc.positions.key(parent, key.clone(), at)),
            _ => None,
        };
        if let Some(Frame {
            kind: Kind::Map(frame),
            ..
        }) = self.stack.last_mut()
        {
            frame.pending = Pending::Value { key, pos: node };
        }
        Ok(())
    }

    /// Keeps a copy of an anchored node for later aliases.
    fn anchor(
        &mut self,
        id: usize,
        value: Value,
        cost: Cost,
        text: Option<String>,
        at: Span,
    ) -> Result<(), DecodeError> {
        self.budget.copy(cost, at)?;
        self.anchors.insert(id, Anchored { value, cost, text });
        Ok(())
    }

    /// Puts a finished node into its parent (or makes it the document's root).
    fn place(
        &mut self,
        value: Value,
        cost: Cost,
        anchor: usize,
        at: Span,
    ) -> Result<(), DecodeError> {
        if anchor != 0 {
            self.anchor(anchor, value.clone(), cost, None, at)?;
        }
        let Some(frame) = self.stack.last_mut() else {
            self.doc().root = Some(value);
            return Ok(());
        };
        match &mut frame.kind {
            Kind::Seq(items) => {
                items.push(value);
                frame.cost.absorb(cost);
            }
            Kind::Map(map) => match std::mem::take(&mut map.pending) {
                Pending::Value { key, .. } => {
                    map.map.insert(key, value);
                    frame.cost.absorb(cost);
                }
                Pending::Merge => {
                    let merge_at = map.merge_at.unwrap_or(at);
                    merge_sources(value, &mut map.merges, merge_at)?;
                    // The merged entries sit one level higher than their source mapping.
                    frame.cost.absorb(Cost {
                        height: cost.height.saturating_sub(1),
                        ..cost
                    });
                }
                Pending::Key => {
                    return Err(DecodeError::invalid_at(
                        Syntax::Yaml,
                        at,
                        "value without a key",
                    ));
                }
            },
        }
        Ok(())
    }
}

/// Whether a scalar's tag makes it a string whatever it looks like: `!!str`, or the
/// non-specific `!`.
fn forces_string(tag: &Tag) -> bool {
    (tag.is_yaml_core_schema() && tag.suffix == "str")
        || (tag.handle.is_empty() && tag.suffix == "!")
}

/// Adds the mappings named by a `<<` value to `merges`, in order of priority.
fn merge_sources(
    value: Value,
    merges: &mut Vec<Map<String, Value>>,
    at: Span,
) -> Result<(), DecodeError> {
    let expected = || {
        DecodeError::at(
            at,
            "expected a mapping or a sequence of mappings as value of merge key `<<`",
        )
    };
    match value {
        Value::Object(map) => merges.push(map),
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Object(map) => merges.push(map),
                    _ => return Err(expected()),
                }
            }
        }
        _ => return Err(expected()),
    }
    Ok(())
}

fn depth_error(at: Span) -> DecodeError {
    DecodeError::at(
        at,
        format!("nesting too deep: expected at most {MAX_DEPTH} levels of sequences and mappings"),
    )
}
