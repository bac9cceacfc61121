//! The table of open connections on one port, and who makes room when it is full.
//!
//! A cap on open connections protects memory, but a cap that refuses new connections
//! once full hands the port to whoever fills it first: 1,024 idle TLS connections (or
//! ones that send a request a minute, past any idle timeout) locked the API server and
//! the kubelet out. So a full table makes room instead of refusing:
//!
//! - a peer (client IP address) at `maxConnectionsPerPeer` closes **its own**
//!   connection that has been quiet longest;
//! - a full table (`maxConnections`) closes the connection, of any peer, that has been
//!   quiet longest;
//! - only a connection that is *answering* a request (its request has arrived in full
//!   and is being evaluated or written) is never closed; when every candidate is
//!   answering, the new connection is refused;
//! - one address opens at most `connectionRatePerPeer` new connections a second (a token
//!   bucket holding two seconds' worth): a client that reopens whatever is closed cannot
//!   turn eviction into a flood of TLS handshakes, nor close other clients' connections
//!   faster than that.
//!
//! "Quiet" is the time since a byte last moved either way (`idle::Activity`), so a client
//! trickling a request body or headers is as evictable as an idle one, and an API
//! server that sends requests all the time is the last to lose a connection. Eviction
//! scans the table (at most `maxConnections` entries, under a mutex) only when it is
//! full; an ordinary accept is a hash-map insert.

use crate::idle::Activity;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Why a connection was closed to make room (the `reason` label of
/// `computeguard_connections_evicted_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// The table was full: the quietest connection of any peer was closed.
    MaxConnections,
    /// The new connection's peer was at its limit: its own quietest one was closed.
    MaxConnectionsPerPeer,
}

impl Eviction {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Eviction::MaxConnections => "max_connections",
            Eviction::MaxConnectionsPerPeer => "max_connections_per_peer",
        }
    }
}

/// Why a new connection was refused (the `reason` label of
/// `computeguard_connections_refused_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The table was full and every connection in it was answering a request.
    AllBusy,
    /// The peer was at `maxConnectionsPerPeer` and every one of its connections was
    /// answering a request.
    PeerAllBusy,
    /// The peer opened more than `connectionRatePerPeer` connections a second.
    PeerRate,
}

impl Refusal {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::AllBusy => "all_busy",
            Refusal::PeerAllBusy => "peer_all_busy",
            Refusal::PeerRate => "peer_rate",
        }
    }
}

/// What one connection shares with the table.
pub(crate) struct Shared {
    /// When bytes last moved.
    pub(crate) activity: Arc<Activity>,
    /// Requests that arrived in full and are being answered (not evictable).
    pub(crate) answering: Arc<AtomicUsize>,
    /// Notified when the table closes the connection to make room.
    pub(crate) evicted: Notify,
}

struct Entry {
    peer: IpAddr,
    shared: Arc<Shared>,
}

/// A peer's allowance of new connections.
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets kept before idle ones (full again) are dropped.
const MAX_BUCKETS: usize = 4096;

struct Inner {
    next_id: u64,
    open: HashMap<u64, Entry>,
    per_peer: HashMap<IpAddr, usize>,
    buckets: HashMap<IpAddr, Bucket>,
    /// When the last "evicting" warning was logged, and evictions since.
    last_warning: Option<Instant>,
    unlogged_evictions: u64,
}

impl Inner {
    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.open.remove(&id)?;
        if let Some(n) = self.per_peer.get_mut(&entry.peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&entry.peer);
            }
        }
        Some(entry)
    }

    /// The quietest connection that is not answering, of `peer` only when given.
    fn quietest(&self, peer: Option<IpAddr>) -> Option<u64> {
        self.open
            .iter()
            .filter(|(_, e)| peer.is_none_or(|p| e.peer == p))
            .filter(|(_, e)| e.shared.answering.load(Ordering::Acquire) == 0)
            // Quietest first; of equally quiet ones, the oldest (smallest id).
            .max_by_key(|(id, e)| (e.shared.activity.quiet_for(), std::cmp::Reverse(**id)))
            .map(|(id, _)| *id)
    }
}

/// The open connections of one listening port.
pub(crate) struct Table {
    inner: Mutex<Inner>,
    max: usize,
    max_per_peer: usize,
    /// New connections a second from one address, and the bucket's size.
    rate: f64,
    burst: f64,
    /// How often at most the "evicting" warning is logged.
    warn_every: Duration,
}

/// What [`Table::admit`] did.
pub(crate) struct Admitted {
    pub(crate) slot: Slot,
    /// The connection closed to make room, if any.
    pub(crate) evicted: Option<Eviction>,
    /// Set when the caller should log that the table is evicting (rate-limited): the
    /// evictions since the last warning, this one included.
    pub(crate) warn: Option<u64>,
}

impl Table {
    /// A table of at most `max` connections, `max_per_peer` from one address, which
    /// opens at most `rate_per_peer` new ones a second (bursts of twice that).
    pub(crate) fn new(max: usize, max_per_peer: usize, rate_per_peer: usize) -> Arc<Table> {
        let rate = rate_per_peer.max(1) as f64;
        Arc::new(Table {
            inner: Mutex::new(Inner {
                next_id: 0,
                open: HashMap::new(),
                per_peer: HashMap::new(),
                buckets: HashMap::new(),
                last_warning: None,
                unlogged_evictions: 0,
            }),
            max: max.max(1),
            max_per_peer: max_per_peer.max(1),
            rate,
            burst: 2.0 * rate,
            warn_every: Duration::from_secs(10),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves the maps consistent (every update is
        // a single insert or remove), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Connections open now.
    pub(crate) fn open(&self) -> usize {
        self.lock().open.len()
    }

    /// Registers a new connection from `peer`, closing the quietest connection that
    /// is not answering when the peer or the table is at its limit.
    pub(crate) fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<Admitted, Refusal> {
        let mut inner = self.lock();
        self.take_token(&mut inner, peer)?;
        let mut evicted = None;
        if inner.per_peer.get(&peer).copied().unwrap_or(0) >= self.max_per_peer {
            let victim = inner.quietest(Some(peer)).ok_or(Refusal::PeerAllBusy)?;
            evict(&mut inner, victim);
            evicted = Some(Eviction::MaxConnectionsPerPeer);
        } else if inner.open.len() >= self.max {
            let victim = inner.quietest(None).ok_or(Refusal::AllBusy)?;
            evict(&mut inner, victim);
            evicted = Some(Eviction::MaxConnections);
        }
        let mut warn = None;
        if evicted.is_some() {
            inner.unlogged_evictions += 1;
            let due = inner
                .last_warning
                .is_none_or(|t| t.elapsed() >= self.warn_every);
            if due {
                warn = Some(std::mem::take(&mut inner.unlogged_evictions));
                inner.last_warning = Some(Instant::now());
            }
        }
        let id = inner.next_id;
        inner.next_id += 1;
        let shared = Arc::new(Shared {
            activity: Arc::new(Activity::default()),
            answering: Arc::new(AtomicUsize::new(0)),
            evicted: Notify::new(),
        });
        inner.open.insert(
            id,
            Entry {
                peer,
                shared: shared.clone(),
            },
        );
        *inner.per_peer.entry(peer).or_insert(0) += 1;
        Ok(Admitted {
            slot: Slot {
                table: self.clone(),
                id,
                shared,
            },
            evicted,
            warn,
        })
    }
}

impl Table {
    /// Takes one token from `peer`'s bucket, refilled at `rate` a second.
    fn take_token(&self, inner: &mut Inner, peer: IpAddr) -> Result<(), Refusal> {
        let now = Instant::now();
        if inner.buckets.len() >= MAX_BUCKETS {
            let (rate, burst) = (self.rate, self.burst);
            inner
                .buckets
                .retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * rate < burst);
        }
        let bucket = inner.buckets.entry(peer).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let refilled = bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * self.rate;
        bucket.tokens = refilled.min(self.burst);
        bucket.at = now;
        if bucket.tokens < 1.0 {
            return Err(Refusal::PeerRate);
        }
        bucket.tokens -= 1.0;
        Ok(())
    }
}

/// Takes a connection out of the table and tells its task to close it. Its slot is
/// free at once; the socket closes as soon as the task sees the notification.
fn evict(inner: &mut Inner, id: u64) {
    if let Some(entry) = inner.remove(id) {
        // `notify_one` stores the permit if the task is not waiting yet.
        entry.shared.evicted.notify_one();
    }
}

/// A connection's place in the table; dropping it frees the place.
pub(crate) struct Slot {
    table: Arc<Table>,
    id: u64,
    shared: Arc<Shared>,
}

impl Slot {
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.table.lock().remove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idle::InFlight;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    fn closed(slot: &Slot) -> bool {
        // The permit `notify_one` stored, if any.
        let notified = slot.shared.evicted.notified();
        let mut notified = std::pin::pin!(notified);
        notified.as_mut().enable()
    }

    #[test]
    fn a_full_table_closes_the_quietest_connection_not_the_newcomer() {
        let table = Table::new(3, 3, 1000);
        let a = table.admit(ip(1)).expect("room").slot;
        std::thread::sleep(Duration::from_millis(20));
        let b = table.admit(ip(1)).expect("room").slot;
        std::thread::sleep(Duration::from_millis(20));
        let c = table.admit(ip(2)).expect("room").slot;
        // `a` speaks again: `b` is now the quietest.
        a.shared.activity.touch();
        let d = table.admit(ip(3)).expect("room made");
        assert_eq!(d.evicted, Some(Eviction::MaxConnections));
        assert_eq!(d.warn, Some(1), "the first eviction is logged");
        assert!(closed(&b), "the quietest connection is told to close");
        assert!(!closed(&a) && !closed(&c));
        assert_eq!(table.open(), 3);
        // A second eviction within the warning interval is counted, not logged.
        std::thread::sleep(Duration::from_millis(20));
        a.shared.activity.touch();
        d.slot.shared.activity.touch();
        let e = table.admit(ip(3)).expect("room made");
        assert_eq!(e.warn, None);
        assert!(closed(&c));
    }

    #[test]
    fn a_peer_at_its_limit_loses_its_own_quietest_connection() {
        let table = Table::new(10, 2, 1000);
        let other = table.admit(ip(9)).expect("room").slot;
        std::thread::sleep(Duration::from_millis(20));
        let first = table.admit(ip(1)).expect("room").slot;
        std::thread::sleep(Duration::from_millis(20));
        let second = table.admit(ip(1)).expect("room").slot;
        let third = table.admit(ip(1)).expect("room made");
        assert_eq!(third.evicted, Some(Eviction::MaxConnectionsPerPeer));
        assert!(closed(&first), "the peer's own oldest idle connection goes");
        assert!(
            !closed(&other),
            "another peer's quieter connection is not touched"
        );
        assert!(!closed(&second));
    }

    #[test]
    fn connections_answering_a_request_are_never_closed_and_then_the_newcomer_is_refused() {
        let table = Table::new(2, 2, 1000);
        let a = table.admit(ip(1)).expect("room").slot;
        let b = table.admit(ip(2)).expect("room").slot;
        let busy_a = InFlight::new(a.shared.answering.clone());
        let busy_b = InFlight::new(b.shared.answering.clone());
        assert_eq!(table.admit(ip(3)).err(), Some(Refusal::AllBusy));
        assert_eq!(table.admit(ip(1)).err(), Some(Refusal::AllBusy));
        let table2 = Table::new(10, 1, 1000);
        let p = table2.admit(ip(1)).expect("room").slot;
        let busy_p = InFlight::new(p.shared.answering.clone());
        assert_eq!(table2.admit(ip(1)).err(), Some(Refusal::PeerAllBusy));
        assert!(table2.admit(ip(2)).is_ok(), "other peers still get in");
        drop(busy_p);
        assert!(table2.admit(ip(1)).is_ok());
        // Once `b` has answered, it is the one to go.
        drop(busy_b);
        let c = table.admit(ip(3)).expect("room made");
        assert_eq!(c.evicted, Some(Eviction::MaxConnections));
        assert!(closed(&b) && !closed(&a));
        drop(busy_a);
    }

    #[test]
    fn an_address_opening_connections_too_fast_is_refused_and_others_are_not() {
        // 10 a second: a burst of 20, then one every 100 ms.
        let table = Table::new(1000, 1000, 10);
        let mut kept = Vec::new();
        for _ in 0..20 {
            kept.push(table.admit(ip(1)).expect("within the burst").slot);
        }
        assert_eq!(table.admit(ip(1)).err(), Some(Refusal::PeerRate));
        assert!(
            table.admit(ip(2)).is_ok(),
            "another address has its own bucket"
        );
        std::thread::sleep(Duration::from_millis(250));
        assert!(table.admit(ip(1)).is_ok(), "refilled at 10 a second");
        assert!(table.admit(ip(1)).is_ok());
        assert_eq!(table.admit(ip(1)).err(), Some(Refusal::PeerRate));
    }

    #[test]
    fn a_closed_connection_frees_its_place_and_its_peers_count() {
        let table = Table::new(2, 1, 1000);
        let a = table.admit(ip(1)).expect("room").slot;
        assert_eq!(table.open(), 1);
        drop(a);
        assert_eq!(table.open(), 0);
        let b = table.admit(ip(1)).expect("room");
        assert_eq!(b.evicted, None, "the peer's count went back to 0");
        // An evicted connection's slot dropping later removes nothing else.
        let c = table.admit(ip(1)).expect("room made").slot;
        drop(b);
        assert_eq!(table.open(), 1);
        drop(c);
        assert_eq!(table.open(), 0);
    }
}
