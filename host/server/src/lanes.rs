//! Where evaluations run.
//!
//! An evaluation starts on the task that received the request, on the async runtime
//! that serves connections: most end within their first epoch tick (1 ms) and never
//! leave it, so a request costs no hand-off between threads and no wake-ups
//! (docs/architecture.md, "Where evaluations run"). One still running at its first
//! yield moves to the *slow lane*, a runtime of its own whose `workers` threads run at
//! a lower priority (nice +5): a runaway or slow policy then delays at most the first
//! tick of the connection runtime's time, while that runtime keeps accepting
//! connections, doing TLS and answering `/healthz`, `/readyz` and `/metrics` within
//! milliseconds. Every evaluation yields at each tick and is stopped at its deadline,
//! so slow evaluations share the slow lane's threads instead of holding one each.
//!
//! Admission is bounded: at most `max_in_flight` evaluations run at once, in either
//! lane. One more waits for a slot (its body is already read; it holds no sandbox while
//! it waits) until the instant its caller gives, half its evaluation budget, and only
//! then is refused and answered as overloaded: a burst of reviews (a Deployment scaled
//! from 0 to 1,000) waits a few milliseconds instead of being turned away.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Instant;

/// The slow lane and the bound on evaluations in flight.
pub struct Lanes {
    slow: Option<tokio::runtime::Runtime>,
    in_flight: Arc<InFlight>,
    max_in_flight: usize,
}

/// Evaluations running, and the waiters woken when one ends.
struct InFlight {
    running: AtomicUsize,
    freed: tokio::sync::Notify,
}

/// `max_in_flight` evaluations are running.
#[derive(Debug)]
pub struct Full;

/// The right to run one evaluation; released when dropped, wherever it ends.
pub struct Slot(Arc<InFlight>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::AcqRel);
        self.0.freed.notify_one();
    }
}

/// Why [`Lanes::run`] has no answer.
#[derive(Debug, PartialEq, Eq)]
pub enum NoAnswer {
    /// Still running at `until` (it goes on until its own deadline stops it).
    TimedOut,
    /// The evaluation panicked.
    Panicked,
}

impl Lanes {
    /// Starts the slow lane with `workers` threads (at least one) named
    /// `computeguard-eval-N`.
    pub fn new(workers: usize, max_in_flight: usize) -> std::io::Result<Lanes> {
        let slow = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers.max(1))
            .thread_name_fn(|| {
                static N: AtomicUsize = AtomicUsize::new(0);
                format!("computeguard-eval-{}", N.fetch_add(1, Ordering::Relaxed))
            })
            .on_thread_start(lower_priority)
            .enable_time()
            .build()?;
        Ok(Lanes {
            slow: Some(slow),
            in_flight: Arc::new(InFlight {
                running: AtomicUsize::new(0),
                freed: tokio::sync::Notify::new(),
            }),
            max_in_flight: max_in_flight.max(1),
        })
    }

    /// Takes a slot, or refuses when `max_in_flight` evaluations are running.
    pub fn try_admit(&self) -> Result<Slot, Full> {
        self.in_flight
            .running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_in_flight).then_some(n + 1)
            })
            .map(|_| Slot(self.in_flight.clone()))
            .map_err(|_| Full)
    }

    /// Takes a slot, waiting for one to be released until `until`; refuses after.
    pub async fn admit(&self, until: Instant) -> Result<Slot, Full> {
        loop {
            // Registered before trying, so a release between the two is not missed.
            let freed = self.in_flight.freed.notified();
            if let Ok(slot) = self.try_admit() {
                return Ok(slot);
            }
            if tokio::time::timeout_at(until.into(), freed).await.is_err() {
                return self.try_admit();
            }
        }
    }

    /// Evaluations running now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.running.load(Ordering::Acquire)
    }

    /// Runs `evaluation` here until its first `Pending`, then on the slow lane; answers
    /// `TimedOut` if it has not ended by `until`.
    pub async fn run<T: Send + 'static>(
        &self,
        evaluation: impl Future<Output = T> + Send + 'static,
        until: Instant,
    ) -> Result<T, NoAnswer> {
        let mut evaluation = Box::pin(evaluation);
        if let Poll::Ready(out) = poll_once(evaluation.as_mut()).await? {
            return Ok(out);
        }
        let Some(slow) = &self.slow else {
            return Err(NoAnswer::Panicked);
        };
        match tokio::time::timeout_at(until.into(), slow.spawn(evaluation)).await {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(_)) => Err(NoAnswer::Panicked),
            Err(_) => Err(NoAnswer::TimedOut),
        }
    }
}

impl Drop for Lanes {
    /// Dropped on the connection runtime: the slow lane's threads end in the background
    /// (a runtime cannot be dropped, waiting, from inside another).
    fn drop(&mut self) {
        if let Some(slow) = self.slow.take() {
            slow.shutdown_background();
        }
    }
}

/// Polls `future` once, then answers what that poll did. A `Pending` future has
/// already asked to be woken (an epoch yield wakes at once); the caller decides who
/// polls it next. A panic in the poll is `Panicked`, as on the slow lane, where the
/// runtime catches it: it must not take the connection's task, and the answer, with it.
async fn poll_once<T>(
    mut future: Pin<&mut (impl Future<Output = T> + ?Sized)>,
) -> Result<Poll<T>, NoAnswer> {
    std::future::poll_fn(|cx| {
        let polled =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| future.as_mut().poll(cx)));
        Poll::Ready(polled.map_err(|_| NoAnswer::Panicked))
    })
    .await
}

/// Slow-lane threads yield to the threads that accept connections and answer health
/// checks when CPUs are short (nice +5, Linux: per thread).
#[cfg(target_os = "linux")]
fn lower_priority() {
    // SAFETY: `setpriority` on the calling thread (`who` 0) only changes its nice
    // value; it takes no pointers.
    #[allow(unsafe_code)]
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 5);
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A future that is `Pending` `n` times (waking itself each time), then ends with
    /// the name of the thread that polled it last.
    fn pending_times(n: usize) -> impl Future<Output = String> + Send + 'static {
        let mut left = n;
        std::future::poll_fn(move |cx| {
            if left == 0 {
                return Poll::Ready(std::thread::current().name().unwrap_or("").to_string());
            }
            left -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        })
    }

    #[tokio::test]
    async fn a_quick_evaluation_ends_where_it_started() {
        let lanes = Lanes::new(1, 4).expect("lanes");
        let here = std::thread::current().name().unwrap_or("").to_string();
        let ran = lanes
            .run(pending_times(0), Instant::now() + Duration::from_secs(5))
            .await;
        assert_eq!(ran, Ok(here));
    }

    #[tokio::test]
    async fn a_long_evaluation_moves_to_the_slow_lane() {
        let lanes = Lanes::new(1, 4).expect("lanes");
        let ran = lanes
            .run(pending_times(3), Instant::now() + Duration::from_secs(5))
            .await
            .expect("answered");
        assert!(ran.starts_with("computeguard-eval-"), "ended on `{ran}`");
    }

    #[tokio::test]
    async fn an_evaluation_still_running_at_until_is_timed_out() {
        let lanes = Lanes::new(1, 4).expect("lanes");
        let never = std::future::pending::<()>();
        let ran = lanes
            .run(never, Instant::now() + Duration::from_millis(50))
            .await;
        assert_eq!(ran, Err(NoAnswer::TimedOut));
    }

    #[tokio::test]
    async fn refuses_past_max_in_flight_and_frees_slots_when_dropped() {
        let lanes = Lanes::new(1, 2).expect("lanes");
        let a = lanes.try_admit().expect("first");
        let b = lanes.try_admit().expect("second");
        assert!(lanes.try_admit().is_err(), "a third is refused");
        drop(a);
        assert_eq!(lanes.in_flight(), 1);
        let c = lanes.try_admit().expect("room again");
        drop((b, c));
        assert_eq!(lanes.in_flight(), 0);
    }

    #[tokio::test]
    async fn a_request_past_max_in_flight_waits_for_a_slot_until_its_instant() {
        let lanes = Arc::new(Lanes::new(1, 1).expect("lanes"));
        let held = lanes.try_admit().expect("first");
        // Nothing is released: refused at its instant, not before.
        let asked = Instant::now();
        let refused = lanes.admit(asked + Duration::from_millis(60)).await;
        assert!(refused.is_err());
        assert!(asked.elapsed() >= Duration::from_millis(50));
        // Released while it waits: admitted then.
        let waiter = {
            let lanes = lanes.clone();
            tokio::spawn(async move {
                lanes
                    .admit(Instant::now() + Duration::from_secs(5))
                    .await
                    .is_ok()
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(held);
        assert!(
            waiter.await.expect("waiter"),
            "admitted once the slot was freed"
        );
        assert_eq!(lanes.in_flight(), 0);
    }

    /// Runs an evaluation that panics after being `Pending` `pendings` times: it must be
    /// no answer, and give its slot back.
    #[allow(clippy::panic)]
    async fn assert_a_panic_is_no_answer(pendings: usize) {
        let lanes = Lanes::new(1, 1).expect("lanes");
        let slot = lanes.try_admit().expect("slot");
        let boom = async move {
            let _slot = slot;
            pending_times(pendings).await;
            panic!("policy host bug");
        };
        let ran = lanes
            .run(boom, Instant::now() + Duration::from_secs(5))
            .await;
        assert_eq!(ran, Err(NoAnswer::Panicked));
        assert_eq!(lanes.in_flight(), 0, "the slot came back");
    }

    #[tokio::test]
    async fn a_panicking_evaluation_on_the_connection_task_is_no_answer() {
        assert_a_panic_is_no_answer(0).await;
    }

    #[tokio::test]
    async fn a_panicking_evaluation_on_the_slow_lane_is_no_answer() {
        assert_a_panic_is_no_answer(1).await;
    }
}
