//! A progress line on standard error for scans, drawn only when standard error is
//! a terminal (never when piped or redirected, so logs and CI output stay clean).

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How often the line is redrawn at most.
const REDRAW: Duration = Duration::from_millis(100);

/// Counts finished files and redraws `checked N/M files` at most every `REDRAW`.
/// Safe to share between the scan's worker threads.
pub struct Progress {
    total: usize,
    done: AtomicUsize,
    /// When the line was last drawn; `None` when the progress is off.
    last: Option<Mutex<Option<Instant>>>,
}

impl Progress {
    /// Progress for `total` files, shown when standard error is a terminal.
    pub fn new(total: usize) -> Progress {
        Self::with(total, std::io::stderr().is_terminal())
    }

    /// Progress that is drawn only when `on`.
    pub fn with(total: usize, on: bool) -> Progress {
        Progress {
            total,
            done: AtomicUsize::new(0),
            last: on.then(|| Mutex::new(None)),
        }
    }

    /// Records one finished file and redraws if it is time.
    pub fn tick(&self, file: &str) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let Some(last) = &self.last else { return };
        // Another thread drawing right now: skip this redraw rather than wait, except
        // for the last file, whose line must be drawn.
        let guard = if done >= self.total {
            last.lock().ok()
        } else {
            last.try_lock().ok()
        };
        let Some(mut last) = guard else {
            return;
        };
        let now = Instant::now();
        if last.is_some_and(|t| now.duration_since(t) < REDRAW) && done < self.total {
            return;
        }
        *last = Some(now);
        let pct = done * 100 / self.total.max(1);
        let file = crate::report::clean(file);
        let name: String = {
            let n = file.chars().count();
            if n > 50 {
                let tail: String = file.chars().skip(n - 49).collect();
                format!("…{tail}")
            } else {
                file.to_string()
            }
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2Kcomputeguard: checked {done}/{} files ({pct}%) {name}",
            self.total
        );
        let _ = err.flush();
    }

    /// Erases the line (when it was drawn).
    pub fn finish(&self) {
        if let Some(last) = &self.last
            && last.lock().is_ok_and(|l| l.is_some())
        {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }

    /// Files finished so far.
    pub fn done(&self) -> usize {
        self.done.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_all_threads() {
        use rayon::prelude::*;
        let p = Progress::with(1000, false);
        (0..1000).into_par_iter().for_each(|_| p.tick("f"));
        assert_eq!(p.done(), 1000);
    }
}
