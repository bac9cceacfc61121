//! The template cache: the webhook's answers by template, kept across requests.
//!
//! What a template is and why its answer is each object's: [`computeguard_policyset::template`].
//! An answer is kept by the template's text, the operation and the evaluation date. The
//! cache is bounded in entries and bytes (`webhook.limits.templateCacheEntries`,
//! `templateCacheMiB`), dropped with its policy set on every reload, and evicts the oldest
//! entry first.

use computeguard_engine::Response;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// What the cache keeps for one template: what every object made from it is answered.
#[derive(Debug)]
pub(crate) enum Kept {
    /// Admitted without a sandbox, for this reason: nothing the objects declare is
    /// compute for the policies (`review::prepare`).
    Skipped(&'static str),
    /// The name-blind policies' answers, by policy index. `every`: every policy was
    /// name-blind for the objects, so a request is decided from these alone, without
    /// reading its compute model.
    Answers {
        answers: Vec<(usize, Response)>,
        every: bool,
    },
}

/// A kept entry, shared with the requests that read it.
pub(crate) type Answers = Arc<Kept>;

/// Templates already evaluated, bounded in entries and bytes, oldest evicted first.
pub struct TemplateCache {
    max_entries: usize,
    max_bytes: usize,
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<Arc<str>, (Answers, usize)>,
    order: VecDeque<Arc<str>>,
    bytes: usize,
}

impl TemplateCache {
    /// A cache of at most `max_entries` templates and `max_bytes` of keys and answers;
    /// 0 entries turns it off.
    pub fn new(max_entries: usize, max_bytes: usize) -> TemplateCache {
        TemplateCache {
            max_entries,
            max_bytes,
            inner: Mutex::default(),
        }
    }

    /// Whether it keeps anything.
    pub fn enabled(&self) -> bool {
        self.max_entries > 0 && self.max_bytes > 0
    }

    /// Templates kept now.
    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |e| e.map.len())
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn get(&self, key: &str) -> Option<Answers> {
        let entries = self.inner.lock().ok()?;
        entries.map.get(key).map(|(a, _)| a.clone())
    }

    pub(crate) fn insert(&self, key: String, kept: Kept) {
        let size = key.len()
            + match &kept {
                Kept::Skipped(why) => 16 + why.len(),
                Kept::Answers { answers, .. } => answers
                    .iter()
                    .map(|(_, r)| response_bytes(r))
                    .sum::<usize>(),
            };
        if !self.enabled() || size > self.max_bytes {
            return;
        }
        let Ok(mut entries) = self.inner.lock() else {
            return;
        };
        let key: Arc<str> = key.into();
        if entries.map.contains_key(&key) {
            return;
        }
        while entries.map.len() >= self.max_entries || entries.bytes + size > self.max_bytes {
            let Some(oldest) = entries.order.pop_front() else {
                break;
            };
            if let Some((_, freed)) = entries.map.remove(&oldest) {
                entries.bytes -= freed;
            }
        }
        entries.bytes += size;
        entries.order.push_back(key.clone());
        entries.map.insert(key, (Arc::new(kept), size));
    }
}

/// What a response holds in memory, roughly: its strings and a fixed cost per item.
fn response_bytes(r: &Response) -> usize {
    let v: usize = r
        .violations
        .iter()
        .map(|v| {
            64 + v.rule.len()
                + v.message.len()
                + v.path.len()
                + v.resource.kind.len()
                + v.resource.name.len()
                + v.remediation.len()
        })
        .sum();
    let r2: usize = r
        .resources
        .iter()
        .map(|x| 32 + x.kind.len() + x.name.len())
        .sum();
    64 + v + r2 + r.patch.as_ref().map_or(0, String::len)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn none() -> Kept {
        Kept::Answers {
            answers: Vec::new(),
            every: true,
        }
    }

    #[test]
    fn the_cache_is_bounded_in_entries_and_bytes_and_evicts_the_oldest() {
        let cache = TemplateCache::new(2, 1 << 20);
        for k in ["a", "b", "c"] {
            cache.insert(k.to_string(), none());
        }
        assert_eq!(cache.len(), 2);
        assert!(cache.get("a").is_none());
        assert!(cache.get("b").is_some() && cache.get("c").is_some());
        let small = TemplateCache::new(100, 200);
        small.insert("x".repeat(250), none());
        assert_eq!(small.len(), 0, "an entry over the byte bound is not kept");
        small.insert("y".repeat(120), none());
        small.insert("z".repeat(120), none());
        assert_eq!(small.len(), 1, "the older entry made room");
        assert!(small.get(&"z".repeat(120)).is_some());
        let off = TemplateCache::new(0, 1 << 20);
        off.insert("a".into(), none());
        assert!(!off.enabled() && off.is_empty());
    }
}
