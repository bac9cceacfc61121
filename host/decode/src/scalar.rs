//! Typing of plain YAML scalars with the YAML 1.2 core schema.
//!
//! See <https://yaml.org/spec/1.2.2/#1032-tag-resolution>. Unlike YAML 1.1 (and many
//! Kubernetes tools), `yes`, `no`, `on`, `off` and `1_000` are strings and `0777` is the
//! decimal 777.

use serde_json::{Number, Value};

/// The value of a plain (unquoted, untagged) scalar.
///
/// `.inf` and `.nan` (and numbers too large for `f64`) stay strings, since JSON cannot hold
/// them.
pub(crate) fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => number(text).map_or_else(|| Value::String(text.to_owned()), Value::Number),
    }
}

fn number(text: &str) -> Option<Number> {
    if let Some(hex) = text.strip_prefix("0x") {
        return radix(hex, 16);
    }
    if let Some(octal) = text.strip_prefix("0o") {
        return radix(octal, 8);
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = text.parse::<i64>() {
            return Some(n.into());
        }
        if let Ok(n) = text.parse::<u64>() {
            return Some(n.into());
        }
        // Too large for 64 bits: a float, as `serde_json` does for JSON.
        return float(text);
    }
    if is_float(unsigned) {
        return float(text);
    }
    None
}

fn radix(digits: &str, radix: u32) -> Option<Number> {
    let valid = !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix));
    if valid {
        u64::from_str_radix(digits, radix).ok().map(Number::from)
    } else {
        None
    }
}

fn float(text: &str) -> Option<Number> {
    text.parse::<f64>().ok().and_then(Number::from_f64)
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
    use super::resolve_plain;
    use serde_json::{Value, json};

    #[test]
    fn core_schema_nulls_and_booleans() {
        for null in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(resolve_plain(null), Value::Null, "{null:?}");
        }
        assert_eq!(resolve_plain("True"), json!(true));
        assert_eq!(resolve_plain("FALSE"), json!(false));
        for string in ["yes", "no", "on", "off", "y", "nULL", "tRUE"] {
            assert_eq!(resolve_plain(string), json!(string), "{string:?}");
        }
    }

    #[test]
    fn core_schema_numbers() {
        assert_eq!(resolve_plain("0"), json!(0));
        assert_eq!(resolve_plain("-12"), json!(-12));
        assert_eq!(resolve_plain("+12"), json!(12));
        assert_eq!(resolve_plain("0x1F"), json!(31));
        assert_eq!(resolve_plain("0o17"), json!(15));
        assert_eq!(resolve_plain("18446744073709551615"), json!(u64::MAX));
        assert_eq!(resolve_plain("1.5"), json!(1.5));
        assert_eq!(resolve_plain(".5"), json!(0.5));
        assert_eq!(resolve_plain("1."), json!(1.0));
        assert_eq!(resolve_plain("-1e3"), json!(-1000.0));
        assert_eq!(resolve_plain("2.5E-1"), json!(0.25));
        assert_eq!(resolve_plain("1e400"), json!("1e400"));
        assert_eq!(resolve_plain("99999999999999999999"), json!(1e20));
    }

    #[test]
    fn yaml_1_1_and_malformed_numbers_stay_strings() {
        for string in [
            "0777x", "1_000", "0x", "0xG", "0o8", "0b101", "1e", ".", "-", "+.", "1.2.3", ".inf",
            "-.inf", ".NaN", "0x-1", "1:20", "e5", "12 ",
        ] {
            assert_eq!(resolve_plain(string), json!(string), "{string:?}");
        }
    }
}
