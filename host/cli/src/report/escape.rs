//! Escaping what reaches a terminal or a CI log: text from files and policies is
//! untrusted, and a terminal obeys escape sequences and a CI runner obeys workflow
//! commands.

/// Text from a document, a policy or a file name, for a human format: control characters
/// escaped (`\n`, `\u{1b}`), so that nothing printed can move the cursor, set colours or
/// start a CI workflow command on a line of its own.
pub fn clean(s: &str) -> String {
    computeguard_engine::text::escape_control(s)
}

/// Like [`clean`] but line breaks are kept: for messages that are several lines by design
/// (a rule pack's compile diagnostic with its caret snippet).
/// A continuation line that would start with `::` or `##` (a GitHub or Azure Pipelines
/// command) is indented, so only the first line can start a line of the log.
pub fn clean_lines(s: &str) -> String {
    s.split('\n')
        .enumerate()
        .map(|(i, line)| {
            let line = clean(line);
            if i > 0 && (line.starts_with("::") || line.starts_with("##")) {
                format!("  {line}")
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A source line for the caret snippet: like [`clean`], but tabs stay tabs (they align the
/// caret).
pub(super) fn clean_source(s: &str) -> String {
    s.split('\t').map(clean).collect::<Vec<_>>().join("\t")
}

pub(super) fn esc_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

pub(super) fn esc_prop(s: &str) -> String {
    esc_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::{clean, clean_lines, clean_source};

    #[test]
    fn human_text_cannot_start_a_ci_command_or_an_escape_sequence() {
        assert_eq!(
            clean("gpu\n::error file=README.md::x\u{1b}[31m"),
            "gpu\\n::error file=README.md::x\\u{1b}[31m"
        );
        assert_eq!(clean_source("\tname: a\u{7}"), "\tname: a\\u{7}");
        assert_eq!(
            clean_lines(
                "error: bad\n  --> p.yaml:2\n::error file=x::y\n##vso[task.complete]\u{1b}"
            ),
            "error: bad\n  --> p.yaml:2\n  ::error file=x::y\n  ##vso[task.complete]\\u{1b}"
        );
    }
}
