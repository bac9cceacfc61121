//! `computeguard serve`: the admission webhook (see `docs/deploy.md`).

use crate::config::{Config, PolicyRef};
use crate::{Outcome, load_config, policies};
use computeguard_engine::{Engine, EngineConfig};
use computeguard_server::{BoxError, Loader, PolicySet, ServeOptions, Server};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:8443")]
    pub addr: SocketAddr,
    /// Also serve /healthz, /readyz and /metrics over plain HTTP on this address, where
    /// connections held on the webhook port cannot block them (the shipped manifests use
    /// 0.0.0.0:8081 and point the kubelet's probes there).
    #[arg(long, value_name = "ADDR")]
    pub probe_addr: Option<SocketAddr>,
    /// PEM certificate chain (re-read when the file changes).
    #[arg(long, value_name = "FILE")]
    pub tls_cert: PathBuf,
    /// PEM private key (re-read when the file changes).
    #[arg(long, value_name = "FILE")]
    pub tls_key: PathBuf,
    /// Configuration file (default: computeguard.yaml found upward from the working directory).
    /// Reloaded when it changes or on SIGHUP.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Extra policy: a rule pack (.yaml) or a component (.wasm), optionally pinned to a digest. Repeatable.
    #[arg(long = "policy", value_parser = PolicyRef::parse, value_name = "FILE[@sha256:HEX]")]
    pub policies: Vec<PolicyRef>,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Seconds between checks of the certificate, config and policy files for changes.
    #[arg(long, default_value_t = 2)]
    pub watch_interval: u64,
    /// Seconds in-flight requests may take to finish after SIGTERM.
    #[arg(long, default_value_t = 20)]
    pub shutdown_timeout: u64,
    /// Seconds between pulls of the oci:// policies and overlays (a moved tag is picked
    /// up, verified, and swapped in; a refused one leaves the previous set serving).
    /// Only when the configuration names an oci:// reference; 0 turns it off.
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub registry_refresh: u64,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// Loads `computeguard.yaml` and every policy, fresh each time (start and reload).
struct CliLoader {
    config: Option<PathBuf>,
    extra: Vec<PolicyRef>,
    watched: Mutex<Vec<PathBuf>>,
    /// Whether the next load is the one at start (see [`restart_warm`]).
    starting: std::sync::atomic::AtomicBool,
    /// Whether the last configuration read names an `oci://` reference (refreshed
    /// every `--registry-refresh` seconds).
    has_oci: Arc<std::sync::atomic::AtomicBool>,
}

impl CliLoader {
    fn files(config: &Config, extra: &[PolicyRef]) -> Vec<PathBuf> {
        config
            .path
            .iter()
            .cloned()
            .chain(config.policies.iter().chain(extra).map(|p| p.path.clone()))
            // Overlays and Azure facts reload with the rest: a changed file is read,
            // checked and, if refused, the previous set keeps serving.
            .chain(config.context.catalog.iter().cloned())
            .chain(config.context.skus.iter().cloned())
            .chain(config.context.usage.iter().map(|(_, p)| p.clone()))
            .chain(config.context.ml_usage.iter().map(|(_, p)| p.clone()))
            .collect()
    }
}

impl Loader for CliLoader {
    fn load(&self) -> Result<PolicySet, BoxError> {
        let config = load_config(self.config.as_ref())?;
        self.has_oci.store(
            computeguard_policyset::oci::has_references(&config, &self.extra),
            std::sync::atomic::Ordering::Relaxed,
        );
        let webhook = config.webhook.clone();
        // A new engine per generation: the evaluation deadline is part of the config.
        let new_engine = || {
            Engine::new(EngineConfig {
                deadline: webhook.limits.evaluation_timeout,
                memory_limit: webhook.limits.memory_bytes,
                // Up to `maxInFlight` evaluations hold an instance at once; a few more
                // slots for reloads.
                max_concurrent_instances: u32::try_from(webhook.limits.max_in_flight + 4)
                    .unwrap_or(u32::MAX),
                ..EngineConfig::default()
            })
        };
        let starting = self
            .starting
            .swap(false, std::sync::atomic::Ordering::Relaxed);
        let (_engine, loaded) = load_warm(
            new_engine,
            |engine| {
                computeguard_policyset::load_policies(
                    engine,
                    &config,
                    &self.extra,
                    policies::OWN_RULES,
                )
                .map_err(BoxError::from)
            },
            || {
                if starting {
                    restart_warm();
                }
            },
        )?;
        let levels = config.rules.clone();
        if let Ok(mut w) = self.watched.lock() {
            *w = Self::files(&config, &self.extra);
        }
        // The same loaded policies `check` runs: every built-in rule needs a compute fact,
        // other policies see every workload (`only_compute_facts`); name-blind packs
        // answer by template (`name_blind`).
        Ok(PolicySet::new(
            loaded,
            levels,
            webhook,
            config.as_of.clone(),
        ))
    }

    fn watched(&self) -> Vec<PathBuf> {
        self.watched.lock().map(|w| w.clone()).unwrap_or_default()
    }

    fn metrics_text(&self) -> String {
        computeguard_policyset::oci::metrics_text()
    }
}

/// Loads with a new engine from `new_engine`; when that engine had to compile anything,
/// calls `before_reload`, then loads again with another new engine from the cache it
/// just filled and drops the first. The compiler's working memory stays with the engine
/// that compiled (Cranelift keeps its contexts for reuse), so a replica that compiled
/// would otherwise serve with tens of MiB more resident than one that started warm
/// (docs/benchmarks.md, section 10). The second load reads the artifacts back: tens of
/// milliseconds.
fn load_warm<E: Into<BoxError>, T>(
    new_engine: impl Fn() -> Result<Engine, E>,
    load: impl Fn(&Engine) -> Result<T, BoxError>,
    before_reload: impl FnOnce(),
) -> Result<(Engine, T), BoxError> {
    let engine = new_engine().map_err(Into::into)?;
    let loaded = load(&engine)?;
    if engine.compiled() == 0 || engine.config().cache_dir.is_none() {
        return Ok((engine, loaded));
    }
    drop((loaded, engine));
    before_reload();
    let engine = new_engine().map_err(Into::into)?;
    let loaded = load(&engine)?;
    tracing::debug!(
        compiled_again = engine.compiled(),
        "policies loaded again from the warm artifact cache"
    );
    Ok((engine, loaded))
}

/// Set in the environment of a server that [`restart_warm`] started.
const RESTARTED: &str = "COMPUTEGUARD_RESTARTED_WARM";

/// At start, after compiling into the artifact cache: replaces this process with a
/// fresh run of the same command (same PID, arguments and environment), which finds the
/// cache warm. Even a fresh engine leaves the compiler's pages behind in this process
/// (the allocator's arenas, the binary's Cranelift code it touched): with glibc, 50-57 MiB
/// resident against 25-31 MiB for a warm start (docs/benchmarks.md, section 10). Nothing
/// is bound yet at that point. Done once (`COMPUTEGUARD_RESTARTED_WARM`), and only on Unix; when the
/// restart cannot happen, this process loads again from the cache and serves.
fn restart_warm() {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        if std::env::var_os(RESTARTED).is_some() {
            return;
        }
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        tracing::info!(
            "policies compiled into the artifact cache; restarting from the warm cache to give the compiler's memory back"
        );
        let err = std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env(RESTARTED, "1")
            .exec();
        tracing::warn!(error = %err, "could not restart; loading again in this process");
    }
}

pub fn run(args: ServeArgs) -> anyhow::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("computeguard-worker")
        .build()?;
    runtime.block_on(async move {
        let mut options = ServeOptions::new(args.addr, args.tls_cert, args.tls_key);
        options.watch_interval = Duration::from_secs(args.watch_interval.max(1));
        options.shutdown_timeout = Duration::from_secs(args.shutdown_timeout);
        options.probe_addr = args.probe_addr;
        let config_path = match &args.config {
            Some(p) => Some(p.clone()),
            None => std::env::current_dir()
                .ok()
                .and_then(|d| Config::discover(&d)),
        };
        let has_oci = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let loader = Arc::new(CliLoader {
            watched: Mutex::new(config_path.iter().cloned().collect()),
            config: config_path,
            extra: args.policies,
            starting: std::sync::atomic::AtomicBool::new(true),
            has_oci: has_oci.clone(),
        });
        let server = Server::bind(options, loader).await?;
        let reload = server.reload_handle();
        if args.registry_refresh > 0 {
            let every = Duration::from_secs(args.registry_refresh);
            let reload = reload.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    if has_oci.load(std::sync::atomic::Ordering::Relaxed) {
                        tracing::debug!("pulling the oci:// policies and overlays again");
                        reload.reload();
                    }
                }
            });
        }
        #[cfg(unix)]
        if let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        {
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    tracing::info!("SIGHUP: reloading");
                    reload.reload();
                }
            });
        }
        server.run(computeguard_server::shutdown_signal()).await?;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(Outcome::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_load_that_compiled_is_served_by_a_fresh_engine_from_the_warm_cache() -> Result<(), BoxError>
    {
        let cache = tempfile::tempdir()?;
        let new_engine = || {
            Engine::new(EngineConfig {
                cache_dir: Some(cache.path().to_path_buf()),
                ..EngineConfig::default()
            })
        };
        let engines = Cell::new(0);
        let compiled_first = Cell::new(0);
        let load = |engine: &Engine| -> Result<_, BoxError> {
            let policy = engine.load(computeguard_builtins::BUILTINS[0].component, "builtin")?;
            if engines.replace(engines.get() + 1) == 0 {
                compiled_first.set(engine.compiled());
            }
            Ok(policy)
        };
        let reloads = Cell::new(0);
        let (engine, policy) = load_warm(new_engine, load, || reloads.set(reloads.get() + 1))?;
        assert!(
            compiled_first.get() > 0,
            "the cold cache made the first engine compile"
        );
        assert_eq!((engines.get(), reloads.get()), (2, 1), "loaded again");
        assert_eq!(engine.compiled(), 0, "the serving engine compiled nothing");
        assert!(!policy.info().rules.is_empty());

        // Warm from the start: one load.
        engines.set(0);
        let (engine, _) = load_warm(new_engine, load, || reloads.set(reloads.get() + 1))?;
        assert_eq!((engines.get(), reloads.get(), engine.compiled()), (1, 1, 0));
        Ok(())
    }
}
