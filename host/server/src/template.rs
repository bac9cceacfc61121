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
///
/// Templates kept as declaring no compute (`Kept::Skipped`) hold at most a quarter of
/// each bound and only ever evict each other: a stream of different plain Pods (the Pods
/// of many Jobs) cannot push the policies' answers for GPU workloads out, each of which
/// costs a sandboxed evaluation to get again.
pub struct TemplateCache {
    max_entries: usize,
    max_bytes: usize,
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<Arc<str>, (Answers, usize)>,
    /// Keys of kept answers, oldest first.
    answers: VecDeque<Arc<str>>,
    /// Keys of kept "no compute", oldest first.
    skipped: VecDeque<Arc<str>>,
    bytes: usize,
    skipped_bytes: usize,
}

impl Entries {
    /// Drops the oldest entry of one kind; false when there is none.
    fn evict(&mut self, skipped: bool) -> bool {
        let queue = if skipped {
            &mut self.skipped
        } else {
            &mut self.answers
        };
        let Some(oldest) = queue.pop_front() else {
            return false;
        };
        if let Some((_, freed)) = self.map.remove(&oldest) {
            self.bytes -= freed;
            if skipped {
                self.skipped_bytes -= freed;
            }
        }
        true
    }
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
        let skipped = matches!(kept, Kept::Skipped(_));
        let size = key.len()
            + match &kept {
                Kept::Skipped(why) => 16 + why.len(),
                Kept::Answers { answers, .. } => answers
                    .iter()
                    .map(|(_, r)| response_bytes(r))
                    .sum::<usize>(),
            };
        let (max_entries, max_bytes) = if skipped {
            (self.max_entries / 4, self.max_bytes / 4)
        } else {
            (self.max_entries, self.max_bytes)
        };
        if !self.enabled() || max_entries == 0 || size > max_bytes {
            return;
        }
        let Ok(mut entries) = self.inner.lock() else {
            return;
        };
        let key: Arc<str> = key.into();
        if entries.map.contains_key(&key) {
            return;
        }
        let full = |e: &Entries| {
            e.map.len() >= self.max_entries
                || e.bytes + size > self.max_bytes
                || (skipped
                    && (e.skipped.len() >= max_entries || e.skipped_bytes + size > max_bytes))
        };
        while full(&entries) {
            // "No compute" makes room among its own kind only. Answers take the room of
            // "no compute" first (learnt again by a native read, some µs), then of the
            // oldest answers (each a sandboxed evaluation to get again).
            let made_room = if skipped {
                entries.evict(true)
            } else {
                entries.evict(true) || entries.evict(false)
            };
            if !made_room {
                return;
            }
        }
        entries.bytes += size;
        if skipped {
            entries.skipped_bytes += size;
            entries.skipped.push_back(key.clone());
        } else {
            entries.answers.push_back(key.clone());
        }
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
    fn templates_without_compute_never_push_answers_out() {
        let cache = TemplateCache::new(8, 1 << 20);
        cache.insert("gpu-a".into(), none());
        cache.insert("gpu-b".into(), none());
        for i in 0..100 {
            cache.insert(
                format!("plain-{i}"),
                Kept::Skipped("no compute fact declared"),
            );
        }
        assert!(cache.get("gpu-a").is_some() && cache.get("gpu-b").is_some());
        // A quarter of the 8 entries for "no compute", the newest kept.
        assert_eq!(cache.len(), 4);
        assert!(cache.get("plain-99").is_some() && cache.get("plain-97").is_none());
        // Answers still fill the cache: "no compute" goes first, then the oldest answers.
        for i in 0..6 {
            cache.insert(format!("gpu-{i}"), none());
        }
        assert_eq!(cache.len(), 8);
        assert!(
            cache.get("gpu-a").is_some(),
            "answers went first only when needed"
        );
        for i in 6..20 {
            cache.insert(format!("gpu-{i}"), none());
        }
        assert_eq!(cache.len(), 8);
        assert!(cache.get("gpu-19").is_some() && cache.get("gpu-a").is_none());
        // Too small a cache for a quarter keeps no "no compute" at all.
        let tiny = TemplateCache::new(3, 1 << 20);
        tiny.insert("plain".into(), Kept::Skipped("no compute fact declared"));
        assert!(tiny.is_empty());
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
