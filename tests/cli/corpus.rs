//! Pins the findings on the shared corpus of real public manifests
//! (`../shared/corpus`, read-only) so regressions show. Re-bless with
//! `COMPUTEGUARD_BLESS=1 cargo test -p computeguard --test cli corpus`.

use crate::*;

#[test]
fn corpus_findings_are_pinned() {
    let corpus = root().join("../shared/corpus");
    if !corpus.is_dir() {
        eprintln!("skipping: {} not found", corpus.display());
        return;
    }
    let out = run(&[
        "check",
        "--format",
        "json",
        "--as-of",
        "2026-11-22",
        "../shared/corpus",
    ]);
    let code = code(&out);
    assert!(
        code == 0 || code == 1,
        "the corpus checks without errors: {}",
        stdout(&out)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let got: String = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            format!(
                "{}\t{}\t{}\t{}\n",
                f["rule"].as_str().unwrap_or(""),
                f["severity"].as_str().unwrap_or(""),
                f["file"]
                    .as_str()
                    .unwrap_or("")
                    .trim_start_matches("../shared/corpus/"),
                f["line"]
            )
        })
        .collect();
    let golden = fixtures().join("corpus.golden.tsv");
    if std::env::var_os("COMPUTEGUARD_BLESS").is_some() {
        std::fs::write(&golden, &got).expect("write golden");
    }
    let want = std::fs::read_to_string(&golden).expect("golden file");
    assert_eq!(
        got, want,
        "corpus findings changed; review and re-bless with COMPUTEGUARD_BLESS=1"
    );
}
