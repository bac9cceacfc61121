//! Property tests: the decoders never panic, and JSON values survive both decoders.

use computeguard_decode::{Document, Positions, decode_json, decode_yaml, escape_key};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Text assembled from the pieces YAML is made of, to reach deep into the parser.
fn yamlish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("\n".to_owned()),
        Just("  ".to_owned()),
        Just("\t".to_owned()),
        Just("- ".to_owned()),
        Just(": ".to_owned()),
        Just(":".to_owned()),
        Just("? ".to_owned()),
        Just("---\n".to_owned()),
        Just("...\n".to_owned()),
        Just("&a ".to_owned()),
        Just("*a".to_owned()),
        Just("&b ".to_owned()),
        Just("*b".to_owned()),
        Just("<<: ".to_owned()),
        Just("\"".to_owned()),
        Just("'".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just(", ".to_owned()),
        Just("# c\n".to_owned()),
        Just("|\n".to_owned()),
        Just(">-\n".to_owned()),
        Just("!!str ".to_owned()),
        Just("! ".to_owned()),
        Just("\u{feff}".to_owned()),
        Just("\r\n".to_owned()),
        "[a-z0-9~/é]{1,6}",
    ];
    prop::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
}

/// Any JSON value with finite numbers, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        any::<String>().prop_map(Value::String),
        "[ -~]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Checks that every node of `value` has a position inside `text`.
fn check_positions(value: &Value, positions: &Positions, text: &str) -> Result<(), TestCaseError> {
    let lines = u32::try_from(text.lines().count().max(1)).unwrap_or(u32::MAX);
    let mut pending = vec![(String::new(), value)];
    while let Some((pointer, node)) = pending.pop() {
        let span = positions.get(&pointer);
        prop_assert!(span.is_some(), "no position for {pointer:?}");
        if let Some(span) = span {
            prop_assert!(
                span.line >= 1 && span.line <= lines,
                "{pointer:?}: {span:?}"
            );
            prop_assert!(span.column >= 1, "{pointer:?}: {span:?}");
            prop_assert!(text.is_char_boundary(span.offset), "{pointer:?}: {span:?}");
        }
        match node {
            Value::Array(items) => pending.extend(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| (format!("{pointer}/{i}"), item)),
            ),
            Value::Object(map) => pending.extend(
                map.iter()
                    .map(|(key, item)| (format!("{pointer}/{}", escape_key(key)), item)),
            ),
            _ => {}
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn decoders_never_panic_on_arbitrary_text(text in any::<String>()) {
        let _ = decode_yaml(&text);
        let _ = decode_json(&text);
    }

    #[test]
    fn decoders_never_panic_on_yaml_like_text(text in yamlish()) {
        if let Ok(documents) = decode_yaml(&text) {
            for Document { value, positions, .. } in &documents {
                prop_assert!(positions.get("").is_some() || value.is_null());
            }
        }
        let _ = decode_json(&text);
    }

    #[test]
    fn json_values_round_trip_through_both_decoders(value in json_value()) {
        let text = serde_json::to_string_pretty(&value)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;

        let document = decode_json(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&document.value, &value);
        check_positions(&value, &document.positions, &text)?;

        let documents = decode_yaml(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        if value.is_null() {
            prop_assert!(documents.is_empty());
        } else {
            prop_assert_eq!(documents.len(), 1);
            prop_assert_eq!(&documents[0].value, &value, "{}", text);
            check_positions(&value, &documents[0].positions, &text)?;
        }
    }
}
