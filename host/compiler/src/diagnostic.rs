//! One problem in a source file, rendered like rustc: a header, the file:line:col,
//! the offending line and a caret under the column.

use std::fmt;

/// A problem at a place in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file, as shown to the user.
    pub file: String,
    /// 1-based; 0 when the problem has no line (e.g. an unreadable file).
    pub line: u32,
    /// 1-based; 0 when unknown.
    pub column: u32,
    /// What is wrong, and what was expected.
    pub message: String,
    /// How to fix it, when there is a likely fix.
    pub help: Option<String>,
    /// The text of `line`, for the code frame.
    pub source_line: Option<String>,
}

impl Diagnostic {
    /// A diagnostic at `line`/`column` of `text` (the file's contents).
    pub fn at(file: &str, text: &str, line: u32, column: u32, message: impl Into<String>) -> Self {
        let source_line = (line > 0)
            .then(|| text.lines().nth(line as usize - 1).map(str::to_string))
            .flatten();
        Diagnostic {
            file: file.to_string(),
            line,
            column,
            message: message.into(),
            help: None,
            source_line,
        }
    }

    /// The same diagnostic with a `help` line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "error: {}", self.message)?;
        if self.line == 0 {
            write!(f, "  --> {}", self.file)?;
        } else {
            write!(
                f,
                "  --> {}:{}:{}",
                self.file,
                self.line,
                self.column.max(1)
            )?;
        }
        if let Some(src) = &self.source_line {
            let gutter = self.line.to_string().len();
            let pad = " ".repeat(gutter);
            write!(f, "\n{pad} |\n{} | {src}\n{pad} | ", self.line)?;
            let col = self.column.max(1) as usize - 1;
            let lead: String = src
                .chars()
                .take(col)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            write!(f, "{lead}^")?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  = help: {help}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_caret_under_the_column() {
        let d = Diagnostic::at(
            "p.yaml",
            "a: 1\nassert: resource.x >\n",
            2,
            20,
            "incomplete expression",
        )
        .with_help("finish the comparison");
        assert_eq!(
            d.to_string(),
            "error: incomplete expression\n  --> p.yaml:2:20\n  |\n2 | assert: resource.x >\n  |                    ^\n  = help: finish the comparison"
        );
    }
}
