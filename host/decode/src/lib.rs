//! Decodes YAML and JSON source files into [`serde_json::Value`] documents and remembers where
//! every node was written, so that a finding reported as a JSON pointer
//! ([RFC 6901](https://www.rfc-editor.org/rfc/rfc6901)) can be shown as `file:line:column`.
//!
//! # Who should use this crate
//!
//! The host side of computeguard (the CLI and the engine) reads Kubernetes manifests, ARM
//! templates and similar files with it before policies run, and uses [`Positions::locate`] to
//! turn the pointer of each violation back into a source location. Policies themselves only see
//! the JSON value. If you only need a value and never a location, `serde_json` alone is enough.
//!
//! # Example
//!
//! ```
//! use computeguard_decode::decode_yaml;
//!
//! let text = "\
//! apiVersion: v1
//! kind: Pod
//! spec:
//!   nodeSelector:
//!     node.kubernetes.io/instance-type: Standard_D2s_v3 # not Standard_NC6: comments are not data
//! ";
//! let documents = decode_yaml(text)?;
//! let pod = &documents[0];
//! assert_eq!(pod.value["kind"], "Pod");
//! assert!(!pod.value.to_string().contains("Standard_NC6"));
//!
//! // `/` inside a key is escaped as `~1` in a pointer; the span is the key's.
//! let span = pod
//!     .positions
//!     .locate("/spec/nodeSelector/node.kubernetes.io~1instance-type")
//!     .ok_or("no position")?;
//! assert_eq!((span.line, span.column), (5, 5));
//!
//! // A violation about a missing field points at the nearest ancestor that exists.
//! let span = pod.positions.locate("/spec/tolerations").ok_or("no position")?;
//! assert_eq!((span.line, span.column), (3, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Core concepts
//!
//! - [`decode_yaml`] parses a whole YAML stream (one [`Document`] per non-empty `---` section)
//!   with the YAML 1.2 core schema: only `true`/`false` are booleans (`yes` and `on` stay
//!   strings) and `0777` is the decimal 777. A plain numeral out of range (`1e309`) is an
//!   error, as it is in JSON, rather than a string that a policy would read as "not set";
//!   `.inf` and `.nan` stay strings. Anchors, aliases and `<<` merge keys are
//!   expanded; duplicate keys and non-scalar keys are errors. Cost: linear in the text plus
//!   the size of what aliases copy, which is capped (see [Limits](#limits)).
//! - [`decode_json`] returns exactly the value `serde_json` parses, plus positions from a linear
//!   scan of the text. Duplicate keys are errors here too, since two parsers could keep
//!   different copies.
//! - [`decode_hcl`] parses a Terraform `.tf` or `.tfvars` file (with `hcl-edit`, which keeps
//!   spans) into the Terraform JSON configuration syntax: blocks nest by type and labels,
//!   expressions that are not literals become `"${...}"` strings. [`TerraformVariables`]
//!   replaces `var.x` with values from `variable` defaults and `.tfvars` files; what it cannot
//!   know stays `${...}`. Cost: linear in the text.
//! - [`decode_bicep`] parses a Bicep file with the tree-sitter Bicep grammar and translates it
//!   into the ARM template shape (`parameters` with `defaultValue`, `variables`, `resources`
//!   with `type`, `apiVersion`, `symbolicName`, nested `resources`); references and other
//!   expressions become ARM expression strings (`[parameters('x')]`). Every node keeps its
//!   Bicep position. Cost: linear in the text.
//! - [`Document`] owns its value and its [`Positions`]; nothing borrows the source text, so a
//!   document can outlive it.
//! - [`Positions`] maps a pointer to a [`Span`]: 1-based line and column (counted in
//!   characters) plus the byte offset. Memory is proportional to the number of nodes written in
//!   the source: nodes copied by an alias are located at the alias, not stored again.
//! - [`DecodeError`] carries the line and column of the problem and a [`Message`] in the
//!   crate's style: for a syntax error the [`Syntax`] broken and what was expected, shown as
//!   ``invalid yaml: ...``, ``invalid json: ...``; otherwise the problem alone
//!   (``duplicate key `x` ``). The caller adds the file name.
//!
//! # Limits
//!
//! A YAML file is untrusted input whose decoded size is not bounded by its length: a few
//! hundred bytes of nested aliases expand to billions of nodes (the "billion laughs" attack).
//! [`decode_yaml`] therefore enforces [`MAX_DEPTH`], [`MAX_NODES`] and [`MAX_ALIAS_BYTES`] and
//! fails with a [`DecodeError`] at the offending node instead. Flow collections (`[`, `{`) are
//! further limited to 255 levels by the parser. JSON has no aliases, so its size is bounded by
//! the text; its nesting is limited to 128 levels by `serde_json`.

#![deny(missing_docs)]

mod bicep;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod json;
mod positions;
mod scalar;
mod terraform;
mod text;
mod tree;
mod yaml;

pub use bicep::{BicepParams, decode_bicep, decode_bicepparam};
pub use error::{DecodeError, Message, Syntax};
pub use json::decode_json;
pub use positions::{Positions, Span, escape_key};
pub use terraform::{
    TerraformVariables, decode_hcl, labelled_blocks, tfvars_precedence, variable_reference,
};
pub use yaml::decode_yaml;

/// Deepest nesting of sequences and mappings accepted in a YAML document, counting the copies
/// that aliases insert.
///
/// The threat is resource exhaustion through depth rather than size: consumers of the decoded
/// [`serde_json::Value`] (cloning, dropping, serializing, policy evaluation) recurse once per
/// level and can overflow the stack on a few kilobytes of `- - - - ...`. Real manifests and
/// templates stay well below 64 levels. Flow collections (`[[[[...`) stop earlier, at the
/// parser's own limit of 255 levels.
pub const MAX_DEPTH: usize = 256;

/// Most nodes (scalars, sequences and mappings) that one [`decode_yaml`] call may produce,
/// over all documents of the file, counting every copy made by an alias and the copy kept for
/// each anchor.
///
/// The threat is the "billion laughs" alias bomb: each level of `b: [*a, *a, *a, ...]`
/// multiplies the output, so a tiny file can otherwise exhaust memory. One million nodes is
/// roughly a 10 MB manifest, far beyond real Kubernetes or ARM files.
pub const MAX_NODES: usize = 1_000_000;

/// Most bytes of keys and strings that aliases (and anchors) may copy in one [`decode_yaml`]
/// call.
///
/// [`MAX_NODES`] alone does not bound memory when the copied nodes are long strings: a
/// one-megabyte anchored string referenced a thousand times costs a gigabyte. This cap keeps
/// the amplification of text bounded as well.
pub const MAX_ALIAS_BYTES: usize = 32 * 1024 * 1024;

/// One decoded document of a file.
#[derive(Clone, Debug)]
pub struct Document {
    /// Index of the document within its file (0-based; YAML `---` separated). Empty documents
    /// are skipped but still counted, so the index always matches the position in the file.
    pub index: usize,
    /// The document's content as JSON.
    pub value: serde_json::Value,
    /// Where each node of `value` was written.
    pub positions: Positions,
}
