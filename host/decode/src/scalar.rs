//! Typing of plain YAML scalars with the YAML 1.2 core schema.
//!
//! See <https://yaml.org/spec/1.2.2/#1032-tag-resolution>. Unlike YAML 1.1 (and many
//! Kubernetes tools), `yes`, `no`, `on`, `off` and `1_000` are strings and `0777` is the
//! decimal 777.

use serde_json::{Number, Value};

/// A plain scalar that the core schema types as a number but that is too large for JSON as
/// `serde_json` reads it (`1e309`, `-1e400`, a hexadecimal over 64 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NotFinite;

impl NotFinite {
    /// The message of the decode error, in the crate's style.
    pub(crate) const MESSAGE: &'static str =
        "number out of range: expected a finite number (quote it to keep it as text)";
}

/// The value of a plain (unquoted, untagged) scalar.
///
/// # Errors
///
/// [`NotFinite`] for a numeral out of range (`1e309`). Such a value used to be kept as a
/// string, which a policy expecting a number reads as "not set": the document would pass
/// unjudged; a JSON file with the same number is an error too. `.inf` and `.nan`, which no one
/// writes for a number by accident, stay strings, since JSON cannot hold them.
pub(crate) fn resolve_plain(text: &str) -> Result<Value, NotFinite> {
    Ok(match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => match number(text) {
            Some(Ok(n)) => Value::Number(n),
            Some(Err(e)) => return Err(e),
            None => Value::String(text.to_owned()),
        },
    })
}

/// `None` when `text` is not a number in the core schema.
fn number(text: &str) -> Option<Result<Number, NotFinite>> {
    if let Some(hex) = text.strip_prefix("0x") {
        return radix(hex, 16);
    }
    if let Some(octal) = text.strip_prefix("0o") {
        return radix(octal, 8);
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = text.parse::<i64>() {
            return Some(Ok(n.into()));
        }
        if let Ok(n) = text.parse::<u64>() {
            return Some(Ok(n.into()));
        }
        // Too large for 64 bits: a float, as `serde_json` does for JSON.
        return float(text);
    }
    if is_float(unsigned) {
        return float(text);
    }
    None
}

fn radix(digits: &str, radix: u32) -> Option<Result<Number, NotFinite>> {
    let valid = !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix));
    if valid {
        // Over 64 bits: a number all the same, that JSON (as `serde_json` reads it) cannot hold.
        Some(
            u64::from_str_radix(digits, radix)
                .map(Number::from)
                .map_err(|_| NotFinite),
        )
    } else {
        None
    }
}

/// A text that matches the core schema's float pattern: a number, or out of range.
fn float(text: &str) -> Option<Result<Number, NotFinite>> {
    Some(
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .ok_or(NotFinite),
    )
}

/// `( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`, the sign already removed.
fn is_float(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |from: usize| {
        bytes.get(from..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        })
    };
    let mut i = digits(0);
    let int_digits = i;
    let mut frac_digits = 0;
    if bytes.get(i) == Some(&b'.') {
        frac_digits = digits(i + 1);
        i += 1 + frac_digits;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        let exp_digits = digits(i);
        if exp_digits == 0 {
            return false;
        }
        i += exp_digits;
    }
    i == bytes.len()
}

#[cfg(test)]
mod tests {
    use super::{NotFinite, resolve_plain};
    use serde_json::{Value, json};

    fn resolve_plain_ok(text: &str) -> Value {
        resolve_plain(text).unwrap_or_else(|_| Value::String(format!("<not finite: {text}>")))
    }

    #[test]
    fn core_schema_nulls_and_booleans() {
        for null in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(resolve_plain_ok(null), Value::Null, "{null:?}");
        }
        assert_eq!(resolve_plain_ok("True"), json!(true));
        assert_eq!(resolve_plain_ok("FALSE"), json!(false));
        for string in ["yes", "no", "on", "off", "y", "nULL", "tRUE"] {
            assert_eq!(resolve_plain_ok(string), json!(string), "{string:?}");
        }
    }

    #[test]
    fn core_schema_numbers() {
        assert_eq!(resolve_plain_ok("0"), json!(0));
        assert_eq!(resolve_plain_ok("-12"), json!(-12));
        assert_eq!(resolve_plain_ok("+12"), json!(12));
        assert_eq!(resolve_plain_ok("0x1F"), json!(31));
        assert_eq!(resolve_plain_ok("0o17"), json!(15));
        assert_eq!(resolve_plain_ok("18446744073709551615"), json!(u64::MAX));
        assert_eq!(resolve_plain_ok("1.5"), json!(1.5));
        assert_eq!(resolve_plain_ok(".5"), json!(0.5));
        assert_eq!(resolve_plain_ok("1."), json!(1.0));
        assert_eq!(resolve_plain_ok("-1e3"), json!(-1000.0));
        assert_eq!(resolve_plain_ok("2.5E-1"), json!(0.25));
        assert_eq!(resolve_plain_ok("99999999999999999999"), json!(1e20));
    }

    #[test]
    fn yaml_1_1_and_malformed_numbers_stay_strings() {
        for string in [
            "0777x",
            "1_000",
            "0x",
            "0xG",
            "0o8",
            "0b101",
            "1e",
            ".",
            "-",
            "+.",
            "1.2.3",
            "0x-1",
            "1:20",
            "e5",
            "12 ",
            ".inf",
            "-.inf",
            ".NaN",
            ".infinity",
            "inf",
            "nan",
        ] {
            assert_eq!(resolve_plain_ok(string), json!(string), "{string:?}");
        }
    }

    #[test]
    fn numerals_out_of_range_are_refused_not_kept_as_text() {
        for text in [
            "1e309",
            "-1e309",
            "1e400",
            "2.5E+999",
            "0x1FFFFFFFFFFFFFFFF",
        ] {
            assert_eq!(resolve_plain(text), Err(NotFinite), "{text:?}");
        }
        // Tiny numbers round to zero; they are finite.
        assert_eq!(resolve_plain_ok("1e-400"), json!(0.0));
    }
}
