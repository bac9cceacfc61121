//! Dotted numeric versions (`12`, `12.4`, `12.4.1`) and their ordering, for CUDA
//! toolkit, driver and Kubernetes version checks.

use std::cmp::Ordering;
use std::fmt;

/// A dotted numeric version such as `12`, `12.4` or `12.4.1`. Missing parts compare as 0,
/// so `12.4`, `12.4.0` and `12.4.0.0` are all equal.
#[derive(Clone, Debug)]
pub struct Version {
    /// At least one part.
    parts: Vec<u64>,
}

impl Version {
    /// Parses `12.4.1`, `12.4`, `12`, ` v12.4 ` (a leading `v`/`V` and surrounding whitespace
    /// are allowed), `1.28.5`; also the leading numeric part of `12.4.1-rc1` / `1.29.2+build`
    /// (a suffix starting with `-` or `+` is ignored).
    ///
    /// Returns `None` for an empty or non-numeric string, an empty part (`12..4`, `12.`,
    /// `.4`), any other suffix (`12.4abc`) or a part that overflows `u64`.
    pub fn parse(s: &str) -> Option<Version> {
        let s = s.trim();
        let s = s.strip_prefix(['v', 'V']).unwrap_or(s);
        let end = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (num, suffix) = s.split_at(end);
        if !(suffix.is_empty() || suffix.starts_with(['-', '+'])) {
            return None;
        }
        let parts = num
            .split('.')
            .map(|p| p.parse().ok())
            .collect::<Option<Vec<u64>>>()?;
        Some(Version { parts })
    }

    /// The numeric parts as parsed (`12.4.1` -> `[12, 4, 1]`), without zero-padding.
    pub fn parts(&self) -> &[u64] {
        &self.parts
    }

    /// The first part (`12` for `12.4.1`).
    pub fn major(&self) -> u64 {
        self.part(0)
    }

    /// The second part, 0 if absent (`4` for `12.4.1`, `0` for `12`).
    pub fn minor(&self) -> u64 {
        self.part(1)
    }

    fn part(&self, i: usize) -> u64 {
        self.parts.get(i).copied().unwrap_or(0)
    }
}

impl fmt::Display for Version {
    /// Prints the parts joined by `.` (`12.4.1`); missing parts are not added.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl Ord for Version {
    /// Numeric comparison part by part, missing parts counting as 0.
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.parts.len().max(other.parts.len());
        (0..n)
            .map(|i| self.part(i).cmp(&other.part(i)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Equality consistent with [`Ord`]: `12.4 == 12.4.0`.
impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Version {}

/// `a >= b` as versions (`at_least("12.4.1", "12.4") == Some(true)`); `None` if either
/// does not parse with [`Version::parse`].
pub fn at_least(a: &str, b: &str) -> Option<bool> {
    compare(a, b).map(Ordering::is_ge)
}

/// Ordering of two version strings (`compare("12.10", "12.9") == Some(Greater)`); `None` if
/// either does not parse with [`Version::parse`].
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    Some(Version::parse(a)?.cmp(&Version::parse(b)?))
}
