//! A compiled rule pack: what `computeguard build` writes into a component and the
//! runtime reads back. The YAML source format lives in the host compiler; this is
//! the checked, pre-parsed form.

use crate::ast::Expr;
use serde::{Deserialize, Serialize};

/// Magic bytes and format version at the start of an encoded pack.
const MAGIC: &[u8; 4] = b"CGPK";
/// Bumped whenever [`Pack`]'s encoding changes; the runtime refuses other versions.
pub const FORMAT: u32 = 2;

/// How serious a violation is: what a rule declares, and the one severity the hosts
/// report in (`computeguard_policyset::Severity` is this type), after the
/// configuration's overrides. Ordered from the most serious: `Error < Warning < Info`.
///
/// With the feature `clap` (off by default, so the policy runtime never links clap) it is
/// a `clap::ValueEnum`, which the CLI's `--fail-on` takes as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Fails a check (exit code 1); denied by the webhook unless configured otherwise.
    Error,
    /// Reported; admitted with a warning by the webhook.
    Warning,
    /// Reported; audited (logged and counted) by the webhook.
    Info,
}

impl Severity {
    /// `error`, `warning` or `info`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }

    /// Whether `self` is at or above `threshold` (error > warning > info).
    pub fn at_least(self, threshold: Severity) -> bool {
        self <= threshold
    }
}

/// A rule pack ready to evaluate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pack {
    /// The pack's name (`metadata.name`), e.g. `computeguard-builtin`.
    pub name: String,
    /// Its semantic version (`metadata.version`).
    pub version: String,
    /// `sha256:<hex>` of the pack source.
    pub source_digest: String,
    /// JSON Schema of the settings, as JSON text.
    pub settings_schema: Option<String>,
    /// The rules, in pack order (the order violations are reported in).
    pub rules: Vec<Rule>,
}

/// One rule: its metadata and its expressions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// What the rule is and reports.
    pub meta: RuleMeta,
    /// Precondition; the rule is skipped unless it yields `true`.
    pub when: Option<Expr>,
    /// The check; `false` is a violation.
    pub assert: Expr,
    /// CEL producing the message (a string).
    pub message_expression: Option<Expr>,
    /// Severity chosen per violation: CEL yielding `error`, `warning` or `info`.
    pub severity_expression: Option<Expr>,
}

/// Why bytes could not be read as a pack.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The bytes do not start with the pack's magic bytes.
    #[error("not a computeguard pack (bad magic bytes)")]
    Magic,
    /// The pack was written in another format version.
    #[error(
        "pack format {found} is not supported (this runtime reads format {FORMAT}); rebuild the pack"
    )]
    Format {
        /// The format version the bytes carry.
        found: u32,
    },
    /// The bytes do not decode; the text says where.
    #[error("corrupt pack: {0}")]
    Corrupt(String),
}

/// A rule without its expressions: what metadata and messages need.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleMeta {
    /// Stable kebab-case rule id.
    pub id: String,
    /// Default severity.
    pub severity: Severity,
    /// Compute-model kinds; empty = all.
    pub targets: Vec<String>,
    /// One sentence: what the rule checks.
    pub description: String,
    /// Why it exists, with its source.
    pub rationale: String,
    /// What to change to satisfy it.
    pub remediation: String,
    /// Static message, used when there is no message expression.
    pub message: Option<String>,
    /// JSON pointer relative to the resource's root.
    pub path: Option<String>,
    /// Compute-model field whose source location the violation points at (e.g. `sku`).
    pub field: Option<String>,
}

/// The encoded form of a pack: each expression is its own postcard blob, so a
/// fresh policy instance decodes only the expressions it evaluates (and message
/// expressions only when a rule fires).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WirePack {
    /// As [`Pack::name`].
    pub name: String,
    /// As [`Pack::version`].
    pub version: String,
    /// As [`Pack::source_digest`].
    pub source_digest: String,
    /// As [`Pack::settings_schema`].
    pub settings_schema: Option<String>,
    /// The rules, each with its expressions still encoded.
    pub rules: Vec<WireRule>,
}

/// One rule of a [`WirePack`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireRule {
    /// As [`Rule::meta`].
    pub meta: RuleMeta,
    /// [`Rule::when`], postcard-encoded.
    pub when: Option<Vec<u8>>,
    /// [`Rule::assert`], postcard-encoded.
    pub assert: Vec<u8>,
    /// [`Rule::message_expression`], postcard-encoded.
    pub message_expression: Option<Vec<u8>>,
    /// [`Rule::severity_expression`], postcard-encoded.
    pub severity_expression: Option<Vec<u8>>,
}

fn blob(e: &Expr) -> Vec<u8> {
    postcard::to_allocvec(e).unwrap_or_default()
}

/// Decodes one expression blob.
pub fn expr_from_blob(bytes: &[u8]) -> Result<Expr, PackError> {
    postcard::from_bytes(bytes).map_err(|e| PackError::Corrupt(e.to_string()))
}

impl WirePack {
    /// Encodes: magic, format version, postcard body.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT.to_le_bytes());
        // Serialising plain data into a Vec cannot fail.
        if let Ok(body) = postcard::to_allocvec(self) {
            out.extend_from_slice(&body);
        }
        out
    }

    /// Decodes bytes written by [`Pack::encode`] without decoding any expression.
    pub fn decode(bytes: &[u8]) -> Result<WirePack, PackError> {
        let (magic, rest) = bytes.split_at_checked(4).ok_or(PackError::Magic)?;
        if magic != MAGIC {
            return Err(PackError::Magic);
        }
        let (ver, body) = rest.split_at_checked(4).ok_or(PackError::Magic)?;
        let found = u32::from_le_bytes([ver[0], ver[1], ver[2], ver[3]]);
        if found != FORMAT {
            return Err(PackError::Format { found });
        }
        postcard::from_bytes(body).map_err(|e| PackError::Corrupt(e.to_string()))
    }
}

impl Pack {
    /// Encodes the pack (magic, format version, postcard body of the [`WirePack`]).
    pub fn encode(&self) -> Vec<u8> {
        let wire = WirePack {
            name: self.name.clone(),
            version: self.version.clone(),
            source_digest: self.source_digest.clone(),
            settings_schema: self.settings_schema.clone(),
            rules: self
                .rules
                .iter()
                .map(|r| WireRule {
                    meta: r.meta.clone(),
                    when: r.when.as_ref().map(blob),
                    assert: blob(&r.assert),
                    message_expression: r.message_expression.as_ref().map(blob),
                    severity_expression: r.severity_expression.as_ref().map(blob),
                })
                .collect(),
        };
        wire.encode()
    }

    /// Decodes bytes written by [`Pack::encode`], every expression included.
    pub fn decode(bytes: &[u8]) -> Result<Pack, PackError> {
        let wire = WirePack::decode(bytes)?;
        let opt = |b: &Option<Vec<u8>>| b.as_deref().map(expr_from_blob).transpose();
        let rules = wire
            .rules
            .iter()
            .map(|r| {
                Ok(Rule {
                    meta: r.meta.clone(),
                    when: opt(&r.when)?,
                    assert: expr_from_blob(&r.assert)?,
                    message_expression: opt(&r.message_expression)?,
                    severity_expression: opt(&r.severity_expression)?,
                })
            })
            .collect::<Result<Vec<_>, PackError>>()?;
        Ok(Pack {
            name: wire.name,
            version: wire.version,
            source_digest: wire.source_digest,
            settings_schema: wire.settings_schema,
            rules,
        })
    }
}
