//! Text that crosses from a policy or a document into a terminal, a log or a CI
//! annotation: control characters are escaped so they cannot move the cursor, set
//! colours or start a workflow command on a line of their own.

/// Escapes every control character (C0, DEL, C1) except none: `\n` becomes `\\n`,
/// ESC becomes `\\u{1b}`. Printable text, including non-ASCII, is unchanged.
pub fn escape_control(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape_control;

    #[test]
    fn control_characters_are_escaped_and_text_is_kept() {
        assert_eq!(escape_control("plain ü text"), "plain ü text");
        assert_eq!(
            escape_control("x\n::error file=README.md::owned"),
            "x\\n::error file=README.md::owned"
        );
        assert_eq!(escape_control("\u{1b}[31mred"), "\\u{1b}[31mred");
        assert_eq!(escape_control("a\u{9b}b\u{7f}"), "a\\u{9b}b\\u{7f}");
    }
}
