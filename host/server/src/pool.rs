//! The evaluation threads. Policies run here, never on the async runtime's worker
//! threads: a runaway or slow policy then costs one evaluation thread, while the
//! runtime keeps accepting connections, doing TLS and answering `/healthz`,
//! `/readyz` and `/metrics` within milliseconds. (wasmtime-wasi's blocking calls
//! must not run on a runtime worker either: they would panic it.)
//!
//! Admission is bounded: at most `max_in_flight` jobs are queued or running; one
//! more is refused at once, and the caller answers it as overloaded.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The jobs waiting for a thread. One lock and one condition variable: a new job wakes
/// exactly one idle thread. (A `std::sync::mpsc` receiver shared behind a mutex, the
/// first version, woke two per job: the thread blocked in `recv` holding the mutex, then,
/// when it let go, the next thread waiting for the mutex.)
#[derive(Default)]
struct Queue {
    jobs: Mutex<(VecDeque<Job>, bool)>,
    ready: Condvar,
}

/// A fixed set of evaluation threads fed by one queue.
pub struct Pool {
    queue: Arc<Queue>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: usize,
}

/// The pool is at `max_in_flight`.
#[derive(Debug)]
pub struct Full;

impl Pool {
    /// Starts `workers` threads (at least one) named `computeguard-eval-N`.
    pub fn new(workers: usize, max_in_flight: usize) -> std::io::Result<Pool> {
        let queue = Arc::new(Queue::default());
        for i in 0..workers.max(1) {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("computeguard-eval-{i}"))
                .spawn(move || work(&queue))?;
        }
        Ok(Pool {
            queue,
            in_flight: Arc::new(AtomicUsize::new(0)),
            max_in_flight: max_in_flight.max(1),
        })
    }

    /// Queues `job`, or refuses it when `max_in_flight` jobs are queued or running.
    pub fn try_submit(&self, job: impl FnOnce() + Send + 'static) -> Result<(), Full> {
        let taken = self
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_in_flight).then_some(n + 1)
            });
        if taken.is_err() {
            return Err(Full);
        }
        let in_flight = self.in_flight.clone();
        let job: Job = Box::new(move || {
            // Released even if the job panics.
            let _slot = Slot(in_flight);
            job();
        });
        match self.queue.jobs.lock() {
            Ok(mut q) => q.0.push_back(job),
            Err(_) => {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
                return Err(Full);
            }
        }
        self.queue.ready.notify_one();
        Ok(())
    }

    /// Jobs queued or running now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }
}

impl Drop for Pool {
    /// The threads finish the jobs already queued, then end.
    fn drop(&mut self) {
        if let Ok(mut q) = self.queue.jobs.lock() {
            q.1 = true;
        }
        self.queue.ready.notify_all();
    }
}

struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn work(queue: &Queue) {
    lower_priority();
    loop {
        let job = {
            let Ok(mut q) = queue.jobs.lock() else {
                return;
            };
            loop {
                if let Some(job) = q.0.pop_front() {
                    break job;
                }
                if q.1 {
                    return; // the pool is gone
                }
                q = match queue.ready.wait(q) {
                    Ok(q) => q,
                    Err(_) => return,
                };
            }
        };
        // A panicking job must not take the thread with it.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

/// Evaluation threads yield to the threads that accept connections and answer
/// health checks when CPUs are short (nice +5, Linux: per thread).
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
    use std::sync::mpsc::sync_channel;
    use std::time::Duration;

    #[test]
    fn refuses_past_max_in_flight_and_frees_slots_when_jobs_end() {
        let pool = Pool::new(1, 2).expect("pool");
        let (release, wait) = sync_channel::<()>(0);
        let wait = Arc::new(Mutex::new(wait));
        for _ in 0..2 {
            let wait = wait.clone();
            pool.try_submit(move || {
                let _ = wait.lock().map(|w| w.recv());
            })
            .expect("room for two");
        }
        assert!(pool.try_submit(|| {}).is_err(), "a third is refused");
        release.send(()).expect("first ends");
        release.send(()).expect("second ends");
        for _ in 0..100 {
            if pool.in_flight() == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(pool.in_flight(), 0);
        let (tx, rx) = sync_channel(1);
        pool.try_submit(move || {
            let _ = tx.send(42);
        })
        .expect("room again");
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(42));
    }

    #[test]
    #[allow(clippy::panic)]
    fn a_panicking_job_keeps_its_thread_and_frees_its_slot() {
        let pool = Pool::new(1, 1).expect("pool");
        pool.try_submit(|| panic!("policy host bug"))
            .expect("submit");
        let (tx, rx) = sync_channel(1);
        let mut sent = false;
        for _ in 0..200 {
            let tx = tx.clone();
            if pool
                .try_submit(move || {
                    let _ = tx.send(1);
                })
                .is_ok()
            {
                sent = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(sent, "the slot came back");
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(1));
    }
}
