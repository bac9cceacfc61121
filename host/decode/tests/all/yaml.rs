use computeguard_decode::{DecodeError, Document, MAX_DEPTH, Message, Syntax, decode_yaml};
use serde_json::json;

use crate::{TestResult, at, error};

/// The only document of `text`.
fn single(text: &str) -> Result<Document, Box<dyn std::error::Error>> {
    let mut documents = decode_yaml(text)?;
    if documents.len() != 1 {
        return Err(format!("expected one document, found {}", documents.len()).into());
    }
    Ok(documents.remove(0))
}

const MANIFESTS: &str = "\
apiVersion: v1
kind: Namespace
metadata:
  name: gpu
---
# nothing here: an empty document
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
spec:
  template:
    spec:
      nodeSelector:
        node.kubernetes.io/instance-type: Standard_NC6s_v3
      containers:
        - name: main
          image: trainer:1
---
";

#[test]
fn multi_document_indices_count_skipped_documents() -> TestResult {
    let documents = decode_yaml(MANIFESTS)?;
    let indices: Vec<usize> = documents.iter().map(|d| d.index).collect();
    // The empty second document and the empty one after the trailing `---` are skipped.
    assert_eq!(indices, [0, 2]);
    assert_eq!(documents[0].value["kind"], "Namespace");
    assert_eq!(documents[1].value["kind"], "Deployment");
    Ok(())
}

#[test]
fn positions_of_the_third_document_are_file_lines() -> TestResult {
    let documents = decode_yaml(MANIFESTS)?;
    let deployment = &documents[1];
    let pointer = "/spec/template/spec/nodeSelector/node.kubernetes.io~1instance-type";
    let span = deployment.positions.get(pointer).ok_or("no span")?;
    assert_eq!((span.line, span.column), (16, 9));
    assert_eq!(
        span.offset,
        MANIFESTS.find("node.kubernetes.io/").ok_or("absent")?
    );
    assert_eq!(
        deployment.value.pointer(pointer),
        Some(&json!("Standard_NC6s_v3"))
    );

    assert_eq!(at(deployment.positions.get("")), Some((8, 1)));
    assert_eq!(
        at(deployment.positions.get("/spec/template/spec/containers/0")),
        Some((18, 11))
    );
    assert_eq!(
        at(deployment
            .positions
            .get("/spec/template/spec/containers/0/image")),
        Some((19, 11))
    );
    assert_eq!(
        at(documents[0].positions.get("/metadata/name")),
        Some((4, 3))
    );
    Ok(())
}

#[test]
fn locate_falls_back_to_the_nearest_existing_ancestor() -> TestResult {
    let documents = decode_yaml(MANIFESTS)?;
    let positions = &documents[1].positions;
    assert_eq!(positions.get("/spec/template/spec/tolerations/0"), None);
    // `spec:` inside the template is on line 14.
    assert_eq!(
        at(positions.locate("/spec/template/spec/tolerations/0")),
        Some((14, 5))
    );
    assert_eq!(
        at(positions.locate("/spec/template/spec/containers/7")),
        Some((17, 7))
    );
    assert_eq!(at(positions.locate("/status")), Some((8, 1)));
    Ok(())
}

#[test]
fn keys_with_slash_and_tilde_are_escaped_in_pointers() -> TestResult {
    let document = single("a/b:\n  c~d: 1\n  e~1f: 2\n")?;
    assert_eq!(document.value, json!({"a/b": {"c~d": 1, "e~1f": 2}}));
    assert_eq!(at(document.positions.get("/a~1b")), Some((1, 1)));
    assert_eq!(at(document.positions.get("/a~1b/c~0d")), Some((2, 3)));
    assert_eq!(at(document.positions.get("/a~1b/e~01f")), Some((3, 3)));
    assert_eq!(document.positions.get("/a/b"), None);
    Ok(())
}

#[test]
fn scalars_follow_the_yaml_1_2_core_schema() -> TestResult {
    let document = single(
        "\
quoted_zero: \"0\"
zero: 0
yes: yes
on: off
tilde: ~
empty:
null_word: null
bool: True
single: 'true'
hex: 0x1F
octal: 0o17
leading_zero: 0777
float: 1.5e3
infinity: .inf
not_a_number: .nan
forced: !!str 12
non_specific: ! 12
custom: !Ref 12
block: |
  line one
  line two
folded: >-
  folded
  text
",
    )?;
    assert_eq!(
        document.value,
        json!({
            "quoted_zero": "0",
            "zero": 0,
            "yes": "yes",
            "on": "off",
            "tilde": null,
            "empty": null,
            "null_word": null,
            "bool": true,
            "single": "true",
            "hex": 31,
            "octal": 15,
            "leading_zero": 777,
            "float": 1500.0,
            "infinity": ".inf",
            "not_a_number": ".nan",
            "forced": "12",
            "non_specific": "12",
            "custom": 12,
            "block": "line one\nline two\n",
            "folded": "folded text",
        })
    );
    Ok(())
}

#[test]
fn keys_are_the_text_written_in_the_source() -> TestResult {
    let document = single("1: a\ntrue: b\n~: c\n0x10: d\n\"quoted\": e\n")?;
    assert_eq!(
        document.value,
        json!({"1": "a", "true": "b", "~": "c", "0x10": "d", "quoted": "e"})
    );
    Ok(())
}

#[test]
fn comments_are_never_data() -> TestResult {
    let document = single(
        "\
# vmSize: Standard_NC24ads_A100_v4
spec:
  vmSize: Standard_D2s_v3 # was Standard_NC24ads_A100_v4
  # - Standard_NC24ads_A100_v4
",
    )?;
    assert_eq!(
        document.value,
        json!({"spec": {"vmSize": "Standard_D2s_v3"}})
    );
    assert!(!document.value.to_string().contains("A100"));
    Ok(())
}

#[test]
fn duplicate_keys_are_errors_with_the_line() -> TestResult {
    let err = error(decode_yaml(
        "metadata:\n  name: a\n  labels: {}\n  name: b\n",
    ))?;
    assert_eq!(err.message.to_string(), "duplicate key `name`");
    assert_eq!(err.message.syntax, None, "well-formed YAML");
    assert_eq!((err.line, err.column), (4, 3));
    assert_eq!(err.to_string(), "duplicate key `name` at line 4 column 3");

    let err = error(decode_yaml("{a: 1, a: 2}"))?;
    assert_eq!(
        (err.message.text.as_str(), err.line, err.column),
        ("duplicate key `a`", 1, 8)
    );
    Ok(())
}

#[test]
fn collection_keys_are_errors_with_the_position() -> TestResult {
    let err = error(decode_yaml("ok: 1\n? [a, b]\n: c\n"))?;
    assert_eq!(
        err.message.to_string(),
        "expected a scalar as mapping key, found a sequence"
    );
    assert_eq!((err.line, err.column), (2, 3));

    let err = error(decode_yaml("anchor: &m {x: 1}\n*m : y\n"))?;
    assert_eq!(
        err.message.to_string(),
        "expected a scalar as mapping key, found an alias to a collection"
    );
    assert_eq!(err.line, 2);
    Ok(())
}

#[test]
fn invalid_yaml_reports_line_and_column() -> TestResult {
    let err = error(decode_yaml("kind: Pod\nspec: a: b\n"))?;
    assert_eq!(
        err,
        DecodeError {
            line: 2,
            column: 8,
            message: Message {
                syntax: Some(Syntax::Yaml),
                text: "mapping values are not allowed in this context".into(),
            },
        }
    );
    // Shown with its syntax, as the message always read.
    assert_eq!(
        err.to_string(),
        "invalid yaml: mapping values are not allowed in this context at line 2 column 8"
    );

    let err = error(decode_yaml("items: [a, b\n"))?;
    assert_eq!(
        err.message.to_string(),
        "invalid yaml: while parsing a flow sequence, expected ',' or ']'"
    );
    assert_eq!((err.line, err.column), (2, 1));
    Ok(())
}

#[test]
fn tabs_in_indentation_are_errors() -> TestResult {
    let err = error(decode_yaml("spec:\n\tvmSize: Standard_D2s_v3\n"))?;
    assert_eq!(err.line, 2);
    assert!(
        err.message
            .to_string()
            .starts_with("invalid yaml: tabs disallowed"),
        "{err}"
    );
    Ok(())
}

/// Issue 28: after a plain value, the scanner reported the tab at the value's start (the
/// line before); the error now names the tab's own line and column.
#[test]
fn a_tab_after_a_plain_value_is_reported_at_its_own_line_and_column() -> TestResult {
    for (text, line, column) in [
        ("name: gpu\n\tsize: Standard_NC6\n", 2, 1),
        ("type: amlcompute\nname: gpu\n\tsize: Standard_NC6\n", 3, 1),
        ("type: amlcompute\nscale:\n  min: 1\n\tmax: 2\n", 4, 1),
    ] {
        let err = error(decode_yaml(text))?;
        assert_eq!((err.line, err.column), (line, column), "{text:?}: {err}");
        assert!(err.message.text.contains("a tab character"), "{err}");
    }
    Ok(())
}

#[test]
fn aliases_are_expanded_and_located_at_the_alias() -> TestResult {
    let document = single(
        "\
defaults: &defaults
  cpu: 2
  memory: 4Gi
small: *defaults
list:
  - *defaults
  - &name worker
  - *name
",
    )?;
    let defaults = json!({"cpu": 2, "memory": "4Gi"});
    assert_eq!(document.value["small"], defaults);
    assert_eq!(
        document.value["list"],
        json!([defaults, "worker", "worker"])
    );
    assert_eq!(at(document.positions.get("/defaults/cpu")), Some((2, 3)));
    assert_eq!(at(document.positions.get("/small")), Some((4, 1)));
    // Copied nodes are not stored again: they resolve to the alias.
    assert_eq!(document.positions.get("/small/cpu"), None);
    assert_eq!(at(document.positions.locate("/small/cpu")), Some((4, 1)));
    assert_eq!(at(document.positions.get("/list/0")), Some((6, 5)));
    assert_eq!(
        at(document.positions.locate("/list/0/memory")),
        Some((6, 5))
    );
    assert_eq!(at(document.positions.get("/list/2")), Some((8, 5)));
    Ok(())
}

#[test]
fn anchors_do_not_cross_documents() -> TestResult {
    let err = error(decode_yaml("a: &x 1\n---\nb: *x\n"))?;
    assert_eq!(err.line, 3);
    assert!(err.message.text.contains("unknown anchor"), "{err}");
    Ok(())
}

#[test]
fn an_alias_inside_its_own_anchor_is_an_error() -> TestResult {
    let err = error(decode_yaml("a: &a [1, *a]\n"))?;
    assert!(err.message.text.starts_with("unknown anchor"), "{err}");
    assert_eq!((err.line, err.column), (1, 11));
    Ok(())
}

#[test]
fn alias_bomb_hits_the_node_limit() -> TestResult {
    let mut text = String::from("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for level in 1..9 {
        let previous = format!("*l{}", level - 1);
        let items = [previous.as_str(); 10].join(", ");
        text.push_str(&format!("l{level}: &l{level} [{items}]\n"));
    }
    let err = error(decode_yaml(&text))?;
    assert!(
        err.message
            .text
            .starts_with("too many nodes: expected at most 1000000"),
        "{err}"
    );
    assert!(err.line >= 5 && err.line <= 9, "{err}");
    Ok(())
}

#[test]
fn alias_of_long_text_hits_the_byte_limit() -> TestResult {
    let long = "x".repeat(1 << 20);
    let aliases = ["*big"; 40].join(", ");
    let text = format!("big: &big {long}\ncopies: [{aliases}]\n");
    let err = error(decode_yaml(&text))?;
    assert!(
        err.message.text.starts_with("aliases copy too much text"),
        "{err}"
    );
    assert_eq!(err.line, 2);
    Ok(())
}

#[test]
fn nesting_deeper_than_the_limit_is_an_error() -> TestResult {
    // `- - - x` nests block sequences on one line.
    let ok = format!("{}x", "- ".repeat(MAX_DEPTH));
    assert_eq!(decode_yaml(&ok)?.len(), 1);

    let deep = format!("{}x", "- ".repeat(MAX_DEPTH + 1));
    let err = error(decode_yaml(&deep))?;
    assert!(
        err.message
            .text
            .starts_with("nesting too deep: expected at most 256"),
        "{err}"
    );
    assert_eq!((err.line, err.column), (1, 513));

    // Flow collections stop earlier, in the parser.
    let flow = format!("{}{}", "[".repeat(300), "]".repeat(300));
    let err = error(decode_yaml(&flow))?;
    assert!(
        err.message
            .to_string()
            .starts_with("invalid yaml: nesting too deep"),
        "{err}"
    );

    // An alias that would land the copy too deep is refused as well.
    let half = MAX_DEPTH / 2 + 1;
    let text = format!(
        "a: &a {}{}\nb: {}*a{}\n",
        "[".repeat(half),
        "]".repeat(half),
        "[".repeat(half),
        "]".repeat(half)
    );
    let err = error(decode_yaml(&text))?;
    assert!(err.message.text.starts_with("nesting too deep"), "{err}");
    assert_eq!(err.line, 2);
    Ok(())
}

#[test]
fn merge_keys_copy_entries_that_the_mapping_does_not_set() -> TestResult {
    let document = single(
        "\
base: &base
  cpu: 2
  memory: 4Gi
gpu: &gpu
  cpu: 8
  accelerator: nvidia
single:
  memory: 1Gi
  <<: *base
several:
  <<: [*base, *gpu]
  memory: 8Gi
inline:
  <<: {zone: '1'}
quoted:
  '<<': not a merge
",
    )?;
    assert_eq!(document.value["single"], json!({"cpu": 2, "memory": "1Gi"}));
    assert_eq!(
        document.value["several"],
        json!({"cpu": 2, "memory": "8Gi", "accelerator": "nvidia"})
    );
    assert_eq!(document.value["inline"], json!({"zone": "1"}));
    assert_eq!(document.value["quoted"], json!({"<<": "not a merge"}));
    // Explicit entries are located at their key, merged ones at the `<<` key.
    assert_eq!(at(document.positions.get("/several/memory")), Some((12, 3)));
    assert_eq!(
        at(document.positions.get("/several/accelerator")),
        Some((11, 3))
    );
    assert_eq!(at(document.positions.get("/single/cpu")), Some((9, 3)));
    assert_eq!(document.positions.get("/several/<<"), None);
    Ok(())
}

#[test]
fn merge_of_a_scalar_is_an_error() -> TestResult {
    let err = error(decode_yaml("a: &a 1\nb:\n  <<: *a\n"))?;
    assert_eq!(
        err.message.to_string(),
        "expected a mapping or a sequence of mappings as value of merge key `<<`"
    );
    assert_eq!((err.line, err.column), (3, 3));
    let err = error(decode_yaml("a: {x: 1}\nb:\n  <<: [{y: 1}, 2]\n"))?;
    assert_eq!(err.line, 3);
    Ok(())
}

#[test]
fn floats_are_parsed_exactly_like_json() -> TestResult {
    // Found by the round-trip property: a best-effort float parser is off by one ulp here.
    let text = "{\"x\": 5.81025716584789e+244, \"y\": -0.1, \"z\": 1e-7}";
    let from_yaml = single(text)?.value;
    let from_json = computeguard_decode::decode_json(text)?.value;
    assert_eq!(from_yaml, from_json);
    assert_eq!(from_yaml["x"].as_f64(), Some(5.81025716584789e244));
    Ok(())
}

#[test]
fn crlf_line_endings_count_as_one_line_break() -> TestResult {
    let text = "kind: Pod\r\nspec:\r\n  script: |\r\n    echo hi\r\n    exit 0\r\n  vmSize: D2\r\n";
    let document = single(text)?;
    assert_eq!(document.value["spec"]["script"], "echo hi\nexit 0\n");
    let span = document.positions.get("/spec/vmSize").ok_or("no span")?;
    assert_eq!((span.line, span.column), (6, 3));
    assert_eq!(text.get(span.offset..), Some("vmSize: D2\r\n"));
    Ok(())
}

#[test]
fn byte_order_mark_is_skipped_but_counted_in_offsets() -> TestResult {
    let text = "\u{feff}kind: Pod\nspec: {}\n";
    let document = single(text)?;
    assert_eq!(document.value["kind"], "Pod");
    let span = document.positions.get("/kind").ok_or("no span")?;
    assert_eq!((span.line, span.column, span.offset), (1, 1, 3));
    let span = document.positions.get("/spec").ok_or("no span")?;
    assert_eq!(text.get(span.offset..), Some("spec: {}\n"));
    Ok(())
}

#[test]
fn columns_count_characters_and_offsets_count_bytes() -> TestResult {
    let text = "note: \"été ☀\" # commentaire é\nsku: {size: \"ñ\", tier: x}\n";
    let document = single(text)?;
    let span = document.positions.get("/sku/tier").ok_or("no span")?;
    assert_eq!((span.line, span.column), (2, 18));
    assert_eq!(text.get(span.offset..), Some("tier: x}\n"));
    Ok(())
}

#[test]
fn empty_and_null_streams_have_no_documents() -> TestResult {
    assert!(decode_yaml("")?.is_empty());
    assert!(decode_yaml("# only a comment\n")?.is_empty());
    assert!(decode_yaml("---\n---\nnull\n...\n")?.is_empty());
    let documents = decode_yaml("--- hello\n--- ~\n--- [1]\n")?;
    let summary: Vec<_> = documents
        .iter()
        .map(|d| (d.index, d.value.clone()))
        .collect();
    assert_eq!(summary, [(0, json!("hello")), (2, json!([1]))]);
    assert_eq!(at(documents[0].positions.get("")), Some((1, 5)));
    Ok(())
}
