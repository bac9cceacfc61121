//! Properties and examples of `version`: parsing, display round trip and ordering.

// Test code: a helper that cannot do its job fails the test with the reason.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use computeguard_policy_core::version::{Version, at_least, compare};
use proptest::prelude::*;
use std::cmp::Ordering;

fn join(parts: &[u64]) -> String {
    parts
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

fn padded(a: &[u64], n: usize) -> Vec<u64> {
    (0..n).map(|i| a.get(i).copied().unwrap_or(0)).collect()
}

/// Small parts make equal and near-equal versions likely.
fn parts() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(prop_oneof![0u64..4, any::<u64>()], 1..5)
}

fn v(s: &str) -> Version {
    Version::parse(s).expect("test version should parse")
}

#[test]
fn parses_accepted_forms() {
    for (s, parts) in [
        ("12.4.1", &[12, 4, 1][..]),
        ("12.4", &[12, 4]),
        ("12", &[12]),
        (" v12.4 ", &[12, 4]),
        ("V12.4", &[12, 4]),
        ("1.28.5", &[1, 28, 5]),
        ("12.4.1-rc1", &[12, 4, 1]),
        ("1.29.2+build", &[1, 29, 2]),
        ("535.104.05", &[535, 104, 5]),
        ("18446744073709551615", &[u64::MAX]),
    ] {
        assert_eq!(v(s).parts(), parts, "{s:?}");
    }
    assert_eq!(v("12.4.1").major(), 12);
    assert_eq!(v("12.4.1").minor(), 4);
    assert_eq!(v("12").minor(), 0);
    assert_eq!(v(" v12.4.1-rc1 ").to_string(), "12.4.1");
}

#[test]
fn rejects_malformed() {
    for s in [
        "",
        " ",
        "v",
        "abc",
        "12..4",
        ".4",
        "12.",
        "12.4.",
        "-12",
        "12.4abc",
        "v 12",
        "1 2",
        "18446744073709551616",
        "١٢.٤",
        "12,4",
        "cuda12.4",
    ] {
        assert_eq!(Version::parse(s), None, "{s:?}");
    }
}

#[test]
fn orders_numerically_with_zero_padding() {
    assert_eq!(v("12.4"), v("12.4.0"));
    assert_eq!(v("12"), v("12.0.0.0"));
    assert!(v("12.10") > v("12.9"));
    assert!(v("12.4.1") > v("12.4"));
    assert!(v("11.8") < v("12"));
    assert_eq!(compare("12.4", "12.4.0"), Some(Ordering::Equal));
    assert_eq!(compare("525.60.13", "525.85"), Some(Ordering::Less));
    assert_eq!(compare("x", "1"), None);
    assert_eq!(at_least("12.4.1", "12.4"), Some(true));
    assert_eq!(at_least("11.8", "12.0"), Some(false));
    assert_eq!(at_least("12", "12.0"), Some(true));
    assert_eq!(at_least("12", ""), None);
}

proptest! {
    #[test]
    fn display_round_trips(p in parts()) {
        let parsed = Version::parse(&join(&p)).expect("joined parts parse");
        prop_assert_eq!(parsed.parts(), &p[..]);
        let again = Version::parse(&parsed.to_string()).expect("display parses");
        prop_assert_eq!(again.parts(), parsed.parts());
        prop_assert_eq!(again, parsed);
    }

    #[test]
    fn ordering_is_padded_lexicographic(a in parts(), b in parts()) {
        let n = a.len().max(b.len());
        let expected = padded(&a, n).cmp(&padded(&b, n));
        prop_assert_eq!(compare(&join(&a), &join(&b)), Some(expected));
        prop_assert_eq!(v(&join(&a)) == v(&join(&b)), expected.is_eq());
        prop_assert_eq!(at_least(&join(&a), &join(&b)), Some(expected.is_ge()));
    }

    #[test]
    fn compare_is_antisymmetric(a in parts(), b in parts()) {
        let (a, b) = (join(&a), join(&b));
        prop_assert_eq!(compare(&a, &b).map(Ordering::reverse), compare(&b, &a));
    }

    #[test]
    fn compare_is_transitive(a in parts(), b in parts(), c in parts()) {
        let (a, b, c) = (join(&a), join(&b), join(&c));
        // Every ordering of the three, so the premise holds for at least one of them.
        for [x, y, z] in [[&a, &b, &c], [&a, &c, &b], [&b, &a, &c], [&b, &c, &a], [&c, &a, &b], [&c, &b, &a]] {
            let (xy, yz, xz) = (compare(x, y), compare(y, z), compare(x, z));
            if xy.is_some_and(Ordering::is_le) && yz.is_some_and(Ordering::is_le) {
                prop_assert!(xz.is_some_and(Ordering::is_le));
                if xy == Some(Ordering::Less) || yz == Some(Ordering::Less) {
                    prop_assert_eq!(xz, Some(Ordering::Less));
                }
            }
        }
    }

    #[test]
    fn trailing_zero_parts_do_not_change_ordering(a in parts(), b in parts(), zeros in 1usize..4) {
        let a0 = format!("{}{}", join(&a), ".0".repeat(zeros));
        prop_assert_eq!(compare(&a0, &join(&a)), Some(Ordering::Equal));
        prop_assert_eq!(compare(&a0, &join(&b)), compare(&join(&a), &join(&b)));
    }

    #[test]
    fn at_least_is_reflexive(a in parts()) {
        prop_assert_eq!(at_least(&join(&a), &join(&a)), Some(true));
    }

    #[test]
    fn parse_never_panics(s in any::<String>()) {
        let _ = Version::parse(&s);
    }

    #[test]
    fn parse_never_panics_on_version_like_text(s in "[ vV0-9.+-]{0,24}[a-z]{0,3}") {
        if let Some(v) = Version::parse(&s) {
            prop_assert!(!v.parts().is_empty());
            prop_assert_eq!(Version::parse(&v.to_string()), Some(v));
        }
    }
}
