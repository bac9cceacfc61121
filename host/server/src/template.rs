//! The template cache: the webhook's answers by template, kept across requests.
//!
//! What a template is and why its answer is each object's: [`computeguard_policyset::template`].
//! An answer is kept by the template's text, the operation and the evaluation date. The
//! cache is bounded in entries and bytes (`webhook.limits.templateCacheEntries`,
//! `templateCacheMiB`), dropped with its policy set on every reload, and evicts the oldest
//! entry first.
//!
//! A key is hashed once per request (`TemplateCache::hash`, SipHash with the cache's own
//! random keys), and that hash serves the look-up, the insert and, kept with the entry, its
//! eviction. An entry is found only by its whole text: two keys of one hash are two entries.

use computeguard_engine::Response;
use hashbrown::HashTable;
use std::collections::VecDeque;
use std::hash::{BuildHasher, RandomState};
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

/// A key as hashed by the cache it is looked up in: see [`TemplateCache::hash`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hashed(u64);

/// Templates already evaluated, bounded in entries and bytes, oldest evicted first.
///
/// Templates kept as declaring no compute (`Kept::Skipped`) hold at most a quarter of
/// each bound and only ever evict each other: a stream of different plain Pods (the Pods
/// of many Jobs) cannot push the policies' answers for GPU workloads out, each of which
/// costs a sandboxed evaluation to get again.
pub struct TemplateCache {
    max_entries: usize,
    max_bytes: usize,
    hasher: RandomState,
    inner: Mutex<Entries>,
}

/// One kept template.
struct Entry {
    hash: u64,
    key: Arc<str>,
    kept: Answers,
    size: usize,
}

#[derive(Default)]
struct Entries {
    table: HashTable<Entry>,
    /// Keys of kept answers, oldest first, with their hashes.
    answers: VecDeque<(u64, Arc<str>)>,
    /// Keys of kept "no compute", oldest first, with their hashes.
    skipped: VecDeque<(u64, Arc<str>)>,
    bytes: usize,
    skipped_bytes: usize,
}

impl Entries {
    fn find(&self, key: &str, hash: Hashed) -> Option<&Entry> {
        self.table
            .find(hash.0, |e| e.hash == hash.0 && *e.key == *key)
    }

    /// Drops the oldest entry of one kind; false when there is none.
    fn evict(&mut self, skipped: bool) -> bool {
        let queue = if skipped {
            &mut self.skipped
        } else {
            &mut self.answers
        };
        let Some((hash, oldest)) = queue.pop_front() else {
            return false;
        };
        // The queue holds the entry's own key: found by pointer, its text not compared.
        if let Ok(found) = self
            .table
            .find_entry(hash, |e| Arc::ptr_eq(&e.key, &oldest))
        {
            let (entry, _) = found.remove();
            self.bytes -= entry.size;
            if skipped {
                self.skipped_bytes -= entry.size;
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
            hasher: RandomState::new(),
            inner: Mutex::default(),
        }
    }

    /// Whether it keeps anything.
    pub fn enabled(&self) -> bool {
        self.max_entries > 0 && self.max_bytes > 0
    }

    /// Templates kept now.
    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |e| e.table.len())
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `key` hashed for this cache: computed once per request and given to
    /// [`TemplateCache::get`] and [`TemplateCache::insert`].
    pub(crate) fn hash(&self, key: &str) -> Hashed {
        Hashed(self.hasher.hash_one(key))
    }

    pub(crate) fn get(&self, key: &str, hash: Hashed) -> Option<Answers> {
        let entries = self.inner.lock().ok()?;
        entries.find(key, hash).map(|e| e.kept.clone())
    }

    /// Keeps `kept` for `key` (`hash`: its [`TemplateCache::hash`]).
    pub(crate) fn insert(&self, key: String, hash: Hashed, kept: Kept) {
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
        if entries.find(&key, hash).is_some() {
            return;
        }
        let full = |e: &Entries| {
            e.table.len() >= self.max_entries
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
        let key: Arc<str> = key.into();
        entries.bytes += size;
        if skipped {
            entries.skipped_bytes += size;
            entries.skipped.push_back((hash.0, key.clone()));
        } else {
            entries.answers.push_back((hash.0, key.clone()));
        }
        entries.table.insert_unique(
            hash.0,
            Entry {
                hash: hash.0,
                key,
                kept: Arc::new(kept),
                size,
            },
            |e| e.hash,
        );
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

    /// The tests look keys up and keep them the way the webhook does: hashed once by the
    /// cache itself.
    impl TemplateCache {
        fn put(&self, key: impl Into<String>, kept: Kept) {
            let key = key.into();
            let hash = self.hash(&key);
            self.insert(key, hash, kept);
        }

        fn has(&self, key: &str) -> bool {
            self.get(key, self.hash(key)).is_some()
        }
    }

    #[test]
    fn templates_without_compute_never_push_answers_out() {
        let cache = TemplateCache::new(8, 1 << 20);
        cache.put("gpu-a", none());
        cache.put("gpu-b", none());
        for i in 0..100 {
            cache.put(
                format!("plain-{i}"),
                Kept::Skipped("no compute fact declared"),
            );
        }
        assert!(cache.has("gpu-a") && cache.has("gpu-b"));
        // A quarter of the 8 entries for "no compute", the newest kept.
        assert_eq!(cache.len(), 4);
        assert!(cache.has("plain-99") && !cache.has("plain-97"));
        // Answers still fill the cache: "no compute" goes first, then the oldest answers.
        for i in 0..6 {
            cache.put(format!("gpu-{i}"), none());
        }
        assert_eq!(cache.len(), 8);
        assert!(cache.has("gpu-a"), "answers went first only when needed");
        for i in 6..20 {
            cache.put(format!("gpu-{i}"), none());
        }
        assert_eq!(cache.len(), 8);
        assert!(cache.has("gpu-19") && !cache.has("gpu-a"));
        // Too small a cache for a quarter keeps no "no compute" at all.
        let tiny = TemplateCache::new(3, 1 << 20);
        tiny.put("plain", Kept::Skipped("no compute fact declared"));
        assert!(tiny.is_empty());
    }

    #[test]
    fn the_cache_is_bounded_in_entries_and_bytes_and_evicts_the_oldest() {
        let cache = TemplateCache::new(2, 1 << 20);
        for k in ["a", "b", "c"] {
            cache.put(k, none());
        }
        assert_eq!(cache.len(), 2);
        assert!(!cache.has("a"));
        assert!(cache.has("b") && cache.has("c"));
        let small = TemplateCache::new(100, 200);
        small.put("x".repeat(250), none());
        assert_eq!(small.len(), 0, "an entry over the byte bound is not kept");
        small.put("y".repeat(120), none());
        small.put("z".repeat(120), none());
        assert_eq!(small.len(), 1, "the older entry made room");
        assert!(small.has(&"z".repeat(120)));
        let off = TemplateCache::new(0, 1 << 20);
        off.put("a", none());
        assert!(!off.enabled() && off.is_empty());
    }

    /// A hash is where to look, never the answer: keys that share one are kept and found
    /// apart by their text, a key of that hash never kept finds nothing, and evicting the
    /// oldest of them drops that one only.
    #[test]
    fn keys_of_one_hash_are_told_apart_by_their_text() {
        let cache = TemplateCache::new(2, 1 << 20);
        let same = Hashed(42);
        let answers = |every| Kept::Answers {
            answers: Vec::new(),
            every,
        };
        cache.insert("gpu-a".into(), same, answers(true));
        cache.insert("gpu-b".into(), same, answers(false));
        cache.insert("gpu-b".into(), same, answers(true));
        assert_eq!(cache.len(), 2);
        let every = |k: &str| match cache.get(k, same).as_deref() {
            Some(Kept::Answers { every, .. }) => Some(*every),
            _ => None,
        };
        assert_eq!(every("gpu-a"), Some(true));
        assert_eq!(
            every("gpu-b"),
            Some(false),
            "the first answer kept, not the second"
        );
        assert_eq!(every("gpu-c"), None, "a text never kept");
        // A third answer evicts the oldest entry of the shared hash, and only it.
        cache.insert("gpu-c".into(), same, answers(true));
        assert_eq!(cache.len(), 2);
        assert_eq!(every("gpu-a"), None);
        assert_eq!((every("gpu-b"), every("gpu-c")), (Some(false), Some(true)));
    }
}
