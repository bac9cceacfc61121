//! [`ShapeError`] and the small field readers the Azure parsers share.
//!
//! Every reader takes the JSON pointer of the value it reads, so an error names the exact
//! place that did not have the expected shape.

use serde_json::{Map, Value};

/// A document that is not the shape a parser reads.
///
/// The message says which document was expected, where (a JSON pointer, RFC 6901; the empty
/// pointer is the whole document), what was expected there and what was found instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not {document}: at {} expected {expected}, found {found}", place(.pointer))]
pub struct ShapeError {
    /// The document the parser reads, e.g. "a VM size list (`az vm list-skus -o json` or a
    /// REST Resource Skus - List body)".
    pub document: &'static str,
    /// JSON pointer (RFC 6901) of the value that has the wrong shape; empty for the whole
    /// document.
    pub pointer: String,
    /// What the parser expected at [`ShapeError::pointer`].
    pub expected: String,
    /// What the document holds there instead.
    pub found: String,
}

fn place(pointer: &str) -> &str {
    if pointer.is_empty() {
        "the top level"
    } else {
        pointer
    }
}

/// The pointer of `key` inside the object at `ptr` (`~` and `/` escaped).
pub(crate) fn key_ptr(ptr: &str, key: &str) -> String {
    format!("{ptr}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// The pointer of item `i` of the array at `ptr`.
pub(crate) fn idx_ptr(ptr: &str, i: usize) -> String {
    format!("{ptr}/{i}")
}

/// A short description of a JSON value for error messages.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => {
            let short: String = s.chars().take(40).collect();
            if short.len() < s.len() {
                format!("the string {short:?}...")
            } else {
                format!("the string {short:?}")
            }
        }
        Value::Array(a) if a.is_empty() => "an empty array".to_string(),
        Value::Array(a) => format!("an array of {} item(s)", a.len()),
        Value::Object(o) if o.is_empty() => "an empty object".to_string(),
        Value::Object(o) => format!("an object with keys {}", keys(o)),
    }
}

/// The keys of an object, sorted, quoted, at most eight.
pub(crate) fn keys(o: &Map<String, Value>) -> String {
    let mut names: Vec<&str> = o.keys().map(String::as_str).collect();
    names.sort_unstable();
    let more = names.len().saturating_sub(8);
    let mut text = names
        .iter()
        .take(8)
        .map(|k| format!("{k:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

/// Reads one document with a fixed name for its errors.
#[derive(Clone, Copy)]
pub(crate) struct Doc(pub &'static str);

impl Doc {
    /// A [`ShapeError`] at `ptr`.
    pub(crate) fn err(
        self,
        ptr: &str,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> ShapeError {
        ShapeError {
            document: self.0,
            pointer: ptr.to_string(),
            expected: expected.into(),
            found: found.into(),
        }
    }

    /// The error for a required key that is absent.
    fn absent(self, obj: &Map<String, Value>, ptr: &str, key: &str, expected: &str) -> ShapeError {
        let found = if obj.is_empty() {
            format!("no {key:?} key (the object is empty)")
        } else {
            format!("no {key:?} key (the object has keys {})", keys(obj))
        };
        self.err(&key_ptr(ptr, key), expected, found)
    }

    /// The items of a list document: a bare array (what `az ... -o json` prints) or an
    /// object whose `"value"` is an array (a REST list body). Returns the items and the
    /// pointer of the array.
    pub(crate) fn list<'v>(
        self,
        v: &'v Value,
        cli: &str,
        rest: &str,
    ) -> Result<(&'v [Value], String), ShapeError> {
        match v {
            Value::Array(items) => Ok((items, String::new())),
            Value::Object(o) => match o.get("value") {
                Some(Value::Array(items)) => Ok((items, "/value".to_string())),
                Some(other) => Err(self.err(
                    "/value",
                    format!("an array (the \"value\" of a {rest} body)"),
                    describe(other),
                )),
                None => Err(self.absent(
                    o,
                    "",
                    "value",
                    &format!("an array (the \"value\" of a {rest} body)"),
                )),
            },
            other => Err(self.err(
                "",
                format!("a JSON array ({cli}) or an object with a \"value\" array ({rest} body)"),
                describe(other),
            )),
        }
    }

    /// `v` as an object, or an error expecting `what`.
    pub(crate) fn object<'v>(
        self,
        v: &'v Value,
        ptr: &str,
        what: &str,
    ) -> Result<&'v Map<String, Value>, ShapeError> {
        v.as_object()
            .ok_or_else(|| self.err(ptr, what.to_string(), describe(v)))
    }

    /// A required string field.
    pub(crate) fn req_str<'v>(
        self,
        obj: &'v Map<String, Value>,
        ptr: &str,
        key: &str,
    ) -> Result<&'v str, ShapeError> {
        match obj.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(self.err(&key_ptr(ptr, key), "a string", describe(other))),
            None => Err(self.absent(obj, ptr, key, "a string")),
        }
    }

    /// An optional string field: absent or `null` is `None`.
    pub(crate) fn opt_str<'v>(
        self,
        obj: &'v Map<String, Value>,
        ptr: &str,
        key: &str,
    ) -> Result<Option<&'v str>, ShapeError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.err(&key_ptr(ptr, key), "a string or null", describe(other))),
        }
    }

    /// A required object field.
    pub(crate) fn req_object<'v>(
        self,
        obj: &'v Map<String, Value>,
        ptr: &str,
        key: &str,
        what: &str,
    ) -> Result<&'v Map<String, Value>, ShapeError> {
        match obj.get(key) {
            Some(Value::Object(o)) => Ok(o),
            Some(other) => Err(self.err(&key_ptr(ptr, key), what, describe(other))),
            None => Err(self.absent(obj, ptr, key, what)),
        }
    }

    /// An optional object field: absent or `null` is `None`.
    pub(crate) fn opt_object<'v>(
        self,
        obj: &'v Map<String, Value>,
        ptr: &str,
        key: &str,
    ) -> Result<Option<&'v Map<String, Value>>, ShapeError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(o)) => Ok(Some(o)),
            Some(other) => Err(self.err(&key_ptr(ptr, key), "an object or null", describe(other))),
        }
    }

    /// An optional array field: absent or `null` is empty.
    pub(crate) fn opt_array<'v>(
        self,
        obj: &'v Map<String, Value>,
        ptr: &str,
        key: &str,
    ) -> Result<&'v [Value], ShapeError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(other) => Err(self.err(&key_ptr(ptr, key), "an array or null", describe(other))),
        }
    }

    /// An optional array of strings: absent or `null` is empty.
    pub(crate) fn opt_str_list(
        self,
        obj: &Map<String, Value>,
        ptr: &str,
        key: &str,
    ) -> Result<Vec<String>, ShapeError> {
        let here = key_ptr(ptr, key);
        self.opt_array(obj, ptr, key)?
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(self.err(&idx_ptr(&here, i), "a string", describe(other))),
            })
            .collect()
    }

    /// A required integer, as JSON number or as a string of digits (the `az` CLI prints
    /// usage counts as strings).
    pub(crate) fn req_int(
        self,
        obj: &Map<String, Value>,
        ptr: &str,
        key: &str,
    ) -> Result<i64, ShapeError> {
        const WHAT: &str = "an integer (a JSON number or a string of digits)";
        match obj.get(key) {
            Some(v) => int_of(v).ok_or_else(|| self.err(&key_ptr(ptr, key), WHAT, describe(v))),
            None => Err(self.absent(obj, ptr, key, WHAT)),
        }
    }

    /// An optional non-negative integer (JSON number); absent or `null` is `None`.
    pub(crate) fn opt_u64(
        self,
        obj: &Map<String, Value>,
        ptr: &str,
        key: &str,
    ) -> Result<Option<u64>, ShapeError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) => Ok(Some(n)),
                None => Err(self.err(
                    &key_ptr(ptr, key),
                    "a non-negative integer or null",
                    describe(v),
                )),
            },
        }
    }

    /// An optional number; absent or `null` is `None`.
    pub(crate) fn opt_f64(
        self,
        obj: &Map<String, Value>,
        ptr: &str,
        key: &str,
    ) -> Result<Option<f64>, ShapeError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_f64() {
                Some(n) => Ok(Some(n)),
                None => Err(self.err(&key_ptr(ptr, key), "a number or null", describe(v))),
            },
        }
    }

    /// An optional boolean; absent or `null` is `None`.
    pub(crate) fn opt_bool(
        self,
        obj: &Map<String, Value>,
        ptr: &str,
        key: &str,
    ) -> Result<Option<bool>, ShapeError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.err(&key_ptr(ptr, key), "a boolean or null", describe(v))),
        }
    }
}

/// An integer from a JSON integer or a string holding one.
fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}
