//! Inline suppressions: `computeguard:ignore <rule-id>[,<rule-id>...] <reason>` in a
//! comment, keyed on the comment syntax of the file's format.
//!
//! | format | comment markers |
//! |---|---|
//! | YAML (`.yaml`, `.yml`) | `#` |
//! | Terraform / HCL (`.tf`, `.tfvars`, `.hcl`) | `#`, `//` |
//! | Bicep (`.bicep`) | `//` |
//! | JSON | none: use a config `ignore:` entry with `pointer` |
//!
//! A directive on a line of its own applies to the next line; a directive after
//! content applies to its own line. A directive without a reason does not
//! suppress anything and is reported as a `suppression-missing-reason` warning.

use std::path::Path;

/// Marker of an inline suppression.
pub const IGNORE_MARKER: &str = "computeguard:ignore";

/// Rule id of the finding reported for a directive without a reason.
pub const MISSING_REASON_RULE: &str = "suppression-missing-reason";

/// One-sentence description of [`MISSING_REASON_RULE`] (SARIF rule metadata, docs).
pub const MISSING_REASON_DESCRIPTION: &str = "An inline `computeguard:ignore` comment names no rule or gives no reason, so it suppresses nothing.";

/// Remediation of [`MISSING_REASON_RULE`].
pub const MISSING_REASON_REMEDIATION: &str = "Write the rule id and why the finding does not apply, e.g. `# computeguard:ignore min-nodes-zero warm pool for the nightly SLA`, or remove the comment.";

/// Comment markers of the file's format, from its extension.
pub fn comment_markers(path: &Path) -> &'static [&'static str] {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("yaml" | "yml") => &["#"],
        Some("tf" | "tfvars" | "hcl") => &["#", "//"],
        Some("bicep") => &["//"],
        _ => &[],
    }
}

/// One `computeguard:ignore` comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    /// 1-based line of the comment.
    pub line: u32,
    /// 1-based column of the comment marker.
    pub column: u32,
    /// The rule ids it names (empty when none was written).
    pub rules: Vec<String>,
    /// The reason, trimmed; `None` when missing.
    pub reason: Option<String>,
    /// The line that the directive silences: the next line for a comment on its own
    /// line, else its own line.
    pub target: u32,
    /// The source line holding the comment.
    pub source: String,
}

/// The directives of one file.
#[derive(Clone, Debug, Default)]
pub struct Directives {
    list: Vec<Directive>,
}

impl Directives {
    /// Finds the directives in `text`, a file at `path` (its extension picks the comment syntax).
    pub fn parse(path: &Path, text: &str) -> Directives {
        let markers = comment_markers(path);
        if markers.is_empty() || !text.contains(IGNORE_MARKER) {
            return Directives::default();
        }
        let mut list = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if let Some(d) = parse_line(markers, line, i as u32 + 1) {
                list.push(d);
            }
        }
        Directives { list }
    }

    /// The directive (with a reason) that silences `rule` at `line`, if any.
    pub fn find(&self, line: u32, rule: &str) -> Option<&Directive> {
        if line == 0 {
            return None;
        }
        self.list
            .iter()
            .find(|d| d.target == line && d.reason.is_some() && d.rules.iter().any(|r| r == rule))
    }

    /// Every directive, in line order.
    pub fn all(&self) -> impl Iterator<Item = &Directive> {
        self.list.iter()
    }

    /// The directives that suppress nothing: no rule id, or no reason.
    pub fn incomplete(&self) -> impl Iterator<Item = &Directive> {
        self.list
            .iter()
            .filter(|d| d.rules.is_empty() || d.reason.is_none())
    }
}

/// Parses `<marker> computeguard:ignore rule[,rule] reason...` anywhere on `line`.
fn parse_line(markers: &[&str], line: &str, number: u32) -> Option<Directive> {
    let at = line.find(IGNORE_MARKER)?;
    // The marker must open the line's comment (`# computeguard:ignore`, `## ...`): one
    // quoted inside a comment (`# write \`# computeguard:ignore RULE REASON\``) is prose.
    let comment_start = comment_start(markers, line)?;
    if comment_start >= at
        || !line[comment_start..at]
            .chars()
            .all(|c| c.is_whitespace() || markers.iter().any(|m| m.contains(c)))
    {
        return None;
    }
    let rest = &line[at + IGNORE_MARKER.len()..];
    // `computeguard:ignored` or `computeguard:ignore-next` are not directives.
    if rest.chars().next().is_some_and(|c| !c.is_whitespace()) {
        return None;
    }
    let rest = rest.trim();
    let (ids, reason) = match rest.split_once(char::is_whitespace) {
        Some((ids, reason)) => (ids, Some(reason.trim().to_string())),
        None => (rest, None),
    };
    let rules: Vec<String> = ids
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let own_line = line[..comment_start].trim().is_empty();
    Some(Directive {
        line: number,
        column: line[..comment_start].chars().count() as u32 + 1,
        rules,
        reason: reason.filter(|r| !r.is_empty()),
        target: if own_line { number + 1 } else { number },
        source: line.to_string(),
    })
}

/// Byte offset of the first comment marker on `line` that opens a comment: at the start of
/// the line or after whitespace (so `a#b` and `https://x` open none).
fn comment_start(markers: &[&str], line: &str) -> Option<usize> {
    line.char_indices()
        .filter(|(i, _)| {
            line[..*i]
                .chars()
                .next_back()
                .is_none_or(char::is_whitespace)
        })
        .map(|(i, _)| i)
        .find(|i| markers.iter().any(|m| line[*i..].starts_with(m)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_directives_apply_to_the_next_or_own_line() {
        let text = "# computeguard:ignore min-nodes-zero warm pool for the nightly SLA\n\
                    min_instances: 2\n\
                    size: NC6 # computeguard:ignore sku-retired,sku-unknown until the Q3 migration\n\
                    x: 1 # computeguard:ignore sku-retired\n\
                    y: 2\n";
        let d = Directives::parse(Path::new("a.yml"), text);
        assert!(d.find(2, "min-nodes-zero").is_some());
        assert!(d.find(1, "min-nodes-zero").is_none());
        assert!(d.find(2, "sku-retired").is_none());
        assert!(d.find(3, "sku-unknown").is_some());
        assert_eq!(
            d.find(3, "sku-retired").and_then(|d| d.reason.as_deref()),
            Some("until the Q3 migration")
        );
        assert!(
            d.find(4, "sku-retired").is_none(),
            "a suppression without a reason does not count"
        );
        assert!(
            d.find(5, "sku-retired").is_none(),
            "a trailing comment covers its own line only"
        );
        let incomplete: Vec<u32> = d.incomplete().map(|d| d.line).collect();
        assert_eq!(incomplete, vec![4]);
    }

    #[test]
    fn comment_syntax_follows_the_format() {
        let slash =
            "  // computeguard:ignore sku-retired legacy pool\n  vm_size = \"Standard_NC6\"\n";
        let hash =
            "  # computeguard:ignore sku-retired legacy pool\n  vm_size = \"Standard_NC6\"\n";
        for (file, text, expect) in [
            ("main.tf", slash, true),
            ("main.tf", hash, true),
            ("main.bicep", slash, true),
            ("main.bicep", hash, false),
            ("a.yaml", slash, false),
            ("a.yaml", hash, true),
            ("a.json", hash, false),
        ] {
            let d = Directives::parse(Path::new(file), text);
            assert_eq!(d.find(2, "sku-retired").is_some(), expect, "{file}: {text}");
        }
    }

    #[test]
    fn marker_must_follow_a_comment_and_stand_alone() {
        let d = Directives::parse(
            Path::new("a.yaml"),
            "note: computeguard:ignore sku-retired x\n#computeguard:ignored sku-retired x\n# computeguard:ignore\n",
        );
        let lines: Vec<(u32, u32)> = d.incomplete().map(|d| (d.line, d.column)).collect();
        assert_eq!(lines, vec![(3, 1)], "only the bare directive counts");
        assert!(d.find(1, "sku-retired").is_none());
        assert!(d.find(3, "sku-retired").is_none());
    }

    #[test]
    fn a_directive_quoted_inside_a_comment_is_prose() {
        // What `computeguard init` writes: an example, not a suppression of rule `RULE`.
        let text = "# Inline, in YAML, Terraform or Bicep: `# computeguard:ignore RULE REASON`.\n\
                    size: NC6\n\
                    ## computeguard:ignore sku-retired doubled marker\n\
                    size: NC6\n\
                    url: https://x # computeguard:ignore sku-unknown after a value\n";
        let d = Directives::parse(Path::new("a.yaml"), text);
        let lines: Vec<u32> = d.all().map(|d| d.line).collect();
        assert_eq!(lines, vec![3, 5]);
        assert!(d.find(4, "sku-retired").is_some());
        assert!(d.find(5, "sku-unknown").is_some());
        let tf =
            "  vm_size = \"Standard_NC6\" // see https://x // computeguard:ignore sku-retired y\n";
        assert!(
            Directives::parse(Path::new("main.tf"), tf)
                .all()
                .next()
                .is_none(),
            "the comment opened at the first `//`"
        );
    }
}
