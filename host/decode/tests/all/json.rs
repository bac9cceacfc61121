use computeguard_decode::{DecodeError, Message, Syntax, decode_json};
use serde_json::{Value, json};

use crate::{TestResult, at, error};

const TEMPLATE: &str = r#"{
  "$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
  "parameters": {
    "vmSize": { "type": "string", "defaultValue": "Standard_NC6s_v3" }
  },
  "resources": [
    {
      "type": "Microsoft.Compute/virtualMachines",
      "properties": {
        "hardwareProfile": {
          "vmSize": "[parameters('vmSize')]"
        }
      }
    },
    42
  ]
}
"#;

#[test]
fn json_value_is_exactly_serde_json_value() -> TestResult {
    let document = decode_json(TEMPLATE)?;
    let expected: Value = serde_json::from_str(TEMPLATE)?;
    assert_eq!(document.value, expected);
    assert_eq!(document.index, 0);
    Ok(())
}

#[test]
fn json_positions_locate_keys_and_items() -> TestResult {
    let document = decode_json(TEMPLATE)?;
    let positions = &document.positions;
    assert_eq!(at(positions.get("")), Some((1, 1)));
    assert_eq!(at(positions.get("/$schema")), Some((2, 3)));
    assert_eq!(
        at(positions.get("/parameters/vmSize/defaultValue")),
        Some((4, 35))
    );
    assert_eq!(at(positions.get("/resources/0")), Some((7, 5)));
    assert_eq!(
        at(positions.get("/resources/0/properties/hardwareProfile/vmSize")),
        Some((11, 11))
    );
    assert_eq!(at(positions.get("/resources/1")), Some((15, 5)));
    assert_eq!(
        at(positions.locate("/resources/0/properties/osProfile")),
        Some((9, 7))
    );
    let span = positions.get("/resources/0/type").ok_or("no span")?;
    assert!(TEMPLATE[span.offset..].starts_with("\"type\""));
    Ok(())
}

#[test]
fn json_keys_are_unescaped_then_pointer_escaped() -> TestResult {
    let document = decode_json(r#"{"a\/b": {"c~d": 1, "\u00e9t\u00e9": [true, null]}}"#)?;
    assert_eq!(
        document.value,
        json!({"a/b": {"c~d": 1, "été": [true, null]}})
    );
    assert_eq!(at(document.positions.get("/a~1b/c~0d")), Some((1, 11)));
    assert_eq!(at(document.positions.get("/a~1b/été/1")), Some((1, 45)));
    Ok(())
}

#[test]
fn json_columns_count_characters() -> TestResult {
    let text = "{\"é☀\": \"ñ\", \"b\": 2}";
    let document = decode_json(text)?;
    let span = document.positions.get("/b").ok_or("no span")?;
    assert_eq!((span.line, span.column), (1, 13));
    assert_eq!(text.get(span.offset..), Some("\"b\": 2}"));
    Ok(())
}

#[test]
fn invalid_json_reports_serde_json_line_in_our_words() -> TestResult {
    let err = error(decode_json("{\n  \"a\": 1\n  \"b\": 2\n}"))?;
    assert_eq!(
        err,
        DecodeError {
            line: 3,
            column: 3,
            message: Message {
                syntax: Some(Syntax::Json),
                text: "expected `,` or `}`".into(),
            },
        }
    );

    let err = error(decode_json("{\"a\": [1, 2}"))?;
    assert_eq!(err.message.to_string(), "invalid json: expected `,` or `]`");
    assert_eq!(err.line, 1);

    let err = error(decode_json("{\"a\": [1,\n"))?;
    assert_eq!(
        err.message.to_string(),
        "invalid json: unexpected end of input, expected a value"
    );
    assert_eq!(err.line, 2);

    let err = error(decode_json("[1, 2,]"))?;
    assert_eq!(
        err.message.to_string(),
        "invalid json: expected another element after `,`"
    );

    let err = error(decode_json("{} {}"))?;
    assert_eq!(
        err.message.to_string(),
        "invalid json: expected the end of input after the value"
    );

    let err = error(decode_json(""))?;
    assert_eq!((err.line, err.column), (1, 1));
    Ok(())
}

#[test]
fn invalid_json_columns_count_characters() -> TestResult {
    let err = error(decode_json("{\"ééé\": tru}"))?;
    assert_eq!(
        err.message.to_string(),
        "invalid json: expected `true`, `false` or `null`"
    );
    assert_eq!((err.line, err.column), (1, 12));
    Ok(())
}

#[test]
fn json_nesting_is_limited_by_serde_json() -> TestResult {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let err = error(decode_json(&deep))?;
    assert!(
        err.message
            .to_string()
            .starts_with("invalid json: nesting too deep"),
        "{err}"
    );
    Ok(())
}

#[test]
fn json_duplicate_keys_are_errors() -> TestResult {
    let err = error(decode_json("{\n  \"sku\": \"a\",\n  \"sku\": \"b\"\n}"))?;
    assert_eq!(err.message.to_string(), "duplicate key `sku`");
    assert_eq!((err.line, err.column), (3, 3));
    // The same key in different objects is fine.
    decode_json(r#"[{"sku": 1}, {"sku": 2}]"#)?;
    Ok(())
}

#[test]
fn json_with_byte_order_mark_and_crlf() -> TestResult {
    let text = "\u{feff}{\r\n  \"a\": 1,\r\n  \"b\": [\r\n    2\r\n  ]\r\n}\r\n";
    let document = decode_json(text)?;
    assert_eq!(document.value, json!({"a": 1, "b": [2]}));
    let span = document.positions.get("/a").ok_or("no span")?;
    assert_eq!((span.line, span.column, span.offset), (2, 3, 8));
    let span = document.positions.get("/b/0").ok_or("no span")?;
    assert_eq!((span.line, span.column), (4, 5));
    assert_eq!(text.get(span.offset..span.offset + 1), Some("2"));
    Ok(())
}

#[test]
fn json_scalars_at_the_root() -> TestResult {
    for (text, value) in [
        ("\"x\"", json!("x")),
        (" 12 ", json!(12)),
        ("null", Value::Null),
    ] {
        let document = decode_json(text)?;
        assert_eq!(document.value, value);
        assert_eq!(document.positions.len(), 1);
    }
    assert_eq!(at(decode_json("\n  true")?.positions.get("")), Some((2, 3)));
    Ok(())
}

#[test]
fn large_json_templates_decode_with_every_position() -> TestResult {
    let resources: Vec<Value> = (0..3000)
        .map(|i| {
            json!({
                "type": "Microsoft.Compute/virtualMachines",
                "name": format!("vm-{i}"),
                "properties": {"hardwareProfile": {"vmSize": "Standard_D2s_v3"}, "tags": [i, "é"]},
            })
        })
        .collect();
    let text = serde_json::to_string_pretty(&json!({ "resources": resources }))?;
    assert!(text.len() > 500_000);
    let document = decode_json(&text)?;
    let span = document
        .positions
        .get("/resources/2999/properties/tags/1")
        .ok_or("no span")?;
    assert_eq!(text.get(span.offset..span.offset + 4), Some("\"é\""));
    Ok(())
}
