//! Reloading: the certificate, configuration and policy files are watched, and a new
//! `PolicySet` is built off the request path and swapped in whole, or refused with the
//! previous one serving on.

use crate::{BoxError, Loader, PolicySet, State, metrics};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tracing::{error, info};

type FileStamps = Vec<(PathBuf, Option<SystemTime>, Option<u64>)>;

fn stamps(files: &[PathBuf]) -> FileStamps {
    files
        .iter()
        .map(|p| {
            let m = std::fs::metadata(p).ok();
            (
                p.clone(),
                m.as_ref().and_then(|m| m.modified().ok()),
                m.map(|m| m.len()),
            )
        })
        .collect()
}

fn count_reload(state: &State, result: &'static str) {
    state
        .metrics
        .reloads
        .get_or_create(&metrics::ReloadLabels { result })
        .inc();
}

/// Re-reads the certificate and reloads the policy set when their files change or a
/// reload is requested.
pub(crate) async fn watch(state: Arc<State>, interval: Duration) {
    let mut last = stamps(&state.loader.watched());
    loop {
        let forced = tokio::select! {
            () = tokio::time::sleep(interval) => false,
            () = state.reload_now.notified() => true,
        };
        match state.certs.reload_if_changed() {
            Ok(true) => info!("TLS certificate reloaded"),
            Ok(false) => {}
            Err(e) => {
                error!(error = %e, "TLS certificate change NOT applied; the previous certificate keeps serving")
            }
        }
        let now = stamps(&state.loader.watched());
        if !forced && now == last {
            continue;
        }
        last = now;
        let loader = state.loader.clone();
        let started = Instant::now();
        match tokio::task::spawn_blocking(move || load_set(loader.as_ref())).await {
            Ok(Ok(set)) => {
                let n = set.policies.len();
                state.set.store(Arc::new(set));
                state.metrics.policies.set(n as i64);
                count_reload(&state, "success");
                info!(
                    policies = n,
                    took_ms = started.elapsed().as_millis() as u64,
                    "policies and configuration reloaded"
                );
            }
            Ok(Err(e)) => {
                count_reload(&state, "failure");
                error!(error = %e, "RELOAD FAILED: the new policies or configuration are broken; the previous set keeps serving");
            }
            Err(e) => {
                count_reload(&state, "failure");
                error!(error = %e, "RELOAD FAILED: the loader panicked; the previous set keeps serving");
            }
        }
    }
}

/// Loads a policy set, then gives the memory the load freed back to the kernel.
pub(crate) fn load_set(loader: &dyn Loader) -> Result<PolicySet, BoxError> {
    let set = loader.load();
    release_freed_memory();
    set
}

/// Compiling policies (a cold artifact cache, or a reload with a new policy) takes
/// tens of MiB that glibc keeps in its per-thread arenas once freed; without this a
/// replica that compiled at start stays at ~85 MiB resident instead of ~26 MiB
/// (docs/benchmarks.md, section 5).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_freed_memory() {
    // SAFETY: `malloc_trim` only returns free heap pages to the kernel; it has no
    // preconditions and touches no memory that is in use.
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_freed_memory() {}
