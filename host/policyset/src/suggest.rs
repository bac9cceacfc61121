//! "Did you mean" for rule ids: every message that names an unknown rule id lists the
//! known ones sorted by how close they are to it (edit distance), closest first, and
//! suggests the closest when it is close enough to be a typo.

/// Edit distance (insertions, deletions, substitutions) between `a` and `b`.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// `known`, deduplicated, closest to `id` first (ties in alphabetical order).
pub fn by_closeness<'k>(id: &str, known: &'k [String]) -> Vec<&'k str> {
    let mut v: Vec<(usize, &str)> = known
        .iter()
        .map(|k| (distance(id, k), k.as_str()))
        .collect();
    v.sort();
    v.dedup_by(|a, b| a.1 == b.1);
    v.into_iter().map(|(_, k)| k).collect()
}

/// The name of `known` closest to `id` when it is close enough to be a typo of it (within a
/// third of its length, at least 2 edits).
pub fn did_you_mean<'k>(id: &str, known: &'k [String]) -> Option<&'k str> {
    by_closeness(id, known)
        .into_iter()
        .next()
        .filter(|best| distance(id, best) <= (best.chars().count() / 3).max(2))
}

/// ``unknown rule `ID` (did you mean `X`?); known rules: ...`` (the suggestion only when the
/// closest id is within a third of its length, at least 2 edits).
pub fn unknown_rule(id: &str, known: &[String]) -> String {
    let sorted = by_closeness(id, known);
    let mut message = format!("unknown rule `{id}`");
    if let Some(best) = sorted.first()
        && distance(id, best) <= (best.chars().count() / 3).max(2)
    {
        message.push_str(&format!(" (did you mean `{best}`?)"));
    }
    if sorted.is_empty() {
        message.push_str("; no policy declares any rule");
    } else {
        message.push_str(&format!("; known rules: {}", sorted.join(", ")));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Vec<String> {
        [
            "sku-retired",
            "min-nodes-zero",
            "region-allowed",
            "region-colocated",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn a_typo_gets_the_closest_rule_first_and_a_suggestion() {
        let m = unknown_rule("min-nodes-zeros", &known());
        assert!(
            m.starts_with("unknown rule `min-nodes-zeros` (did you mean `min-nodes-zero`?); known rules: min-nodes-zero, "),
            "{m}"
        );
        let m = unknown_rule("region-alowed", &known());
        assert!(m.contains("(did you mean `region-allowed`?)"), "{m}");
        assert!(
            m.ends_with(
                "known rules: region-allowed, region-colocated, sku-retired, min-nodes-zero"
            ),
            "{m}"
        );
    }

    #[test]
    fn nothing_close_suggests_nothing_but_still_lists_every_rule() {
        let m = unknown_rule("gpu", &known());
        assert!(!m.contains("did you mean"), "{m}");
        assert_eq!(m.matches(", ").count(), 3, "{m}");
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
    }
}
