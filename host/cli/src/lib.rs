//! The `computeguard` command line: `check` (Kubernetes, Azure ML, ARM, Bicep and
//! Terraform files and exports of what runs), `inspect`, `rules`, `explain`, `policies`,
//! `build`, `test`, `new`, `init`, `serve` (the admission webhook) and `lsp` (the
//! language server, [`lsp`]).
//!
//! Exit codes (the contract CI relies on): 0 nothing at or above `--fail-on`;
//! 1 findings at or above it (or failing pack tests); 2 usage error,
//! unreadable/invalid input or a broken policy.

pub mod baseline;
mod commands;
/// `computeguard.yaml`, from the policy-set layer (`computeguard_policyset::config`).
pub use computeguard_policyset::config;
pub mod cost;
pub mod lsp;
pub mod plan;
pub mod policies;
pub(crate) mod prepare;
pub mod progress;
pub mod report;
pub mod scan;
/// "Did you mean" for rule ids, from the policy-set layer (`computeguard_policyset::suggest`).
pub use computeguard_policyset::suggest;
pub mod suppress;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "computeguard",
    version,
    about = "Compliance and best-practice rules for AI/GPU compute on Azure, evaluated as sandboxed Wasm policies"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check Kubernetes manifests, Azure ML YAML, ARM templates, Bicep and Terraform files,
    /// and exports of what runs (directories are walked, honouring .gitignore).
    Check(commands::check::CheckArgs),
    /// For each GPU resource, the sizes and regions it could move to that pass every rule,
    /// each verified by the same evaluation as `check`.
    Plan(commands::plan::PlanArgs),
    /// Compile a rule pack into a self-contained policy component.
    Build(commands::build::BuildArgs),
    /// Run a rule pack's own test cases through its compiled component.
    Test(commands::test::TestArgs),
    /// Explain a rule: what it checks, why (with sources) and how to fix it.
    Explain(commands::explain::ExplainArgs),
    /// List every rule of the loaded policies with its severity and a one-line summary.
    Rules(commands::rules::RulesArgs),
    /// Print the compute model of each resource in files, as the rules see it, with what
    /// stayed unresolved.
    Inspect(commands::inspect::InspectArgs),
    /// List the available policies with versions and digests, or export the built-ins.
    Policies(commands::policies::PoliciesArgs),
    /// Scaffold a new rule pack.
    New(commands::new::NewArgs),
    /// Run the Kubernetes admission webhook (HTTPS: /validate, /mutate, /healthz, /readyz, /metrics).
    Serve(commands::serve::ServeArgs),
    /// Write a commented starter computeguard.yaml.
    Init(commands::init::InitArgs),
    /// Run the language server (LSP over standard input and output): the findings of
    /// `check` in the editor while the file is written (docs/editors.md).
    Lsp(commands::lsp::LspArgs),
    /// Inspect and extend the VM size catalog: validate, import, show, list, diff.
    Catalog(commands::catalog::CatalogArgs),
    /// Publish a policy component, rule pack or catalog overlay to an OCI registry
    /// (prints the manifest digest).
    Push(commands::registry::PushArgs),
    /// Pull an OCI artifact into the cache, verified (prints the digest and the cached file).
    Pull(commands::registry::PullArgs),
    /// Sign an OCI artifact with a key pair, stored as cosign stores signatures.
    Sign(commands::registry::SignArgs),
}

/// Outcome of a command, mapped to the exit code.
pub enum Outcome {
    Clean,
    Findings,
}

/// Parses the arguments, runs the command and returns the exit code.
pub fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    init_logging(&cli.command);
    quiet_broken_pipe(matches!(cli.command, Command::Check(_) | Command::Test(_)));
    let result = match cli.command {
        Command::Check(a) => commands::check::run(a),
        Command::Plan(a) => commands::plan::run(a),
        Command::Build(a) => commands::build::run(a),
        Command::Test(a) => commands::test::run(a),
        Command::Explain(a) => commands::explain::run(a),
        Command::Rules(a) => commands::rules::run(a),
        Command::Inspect(a) => commands::inspect::run(a),
        Command::Policies(a) => commands::policies::run(a),
        Command::New(a) => commands::new::run(a),
        Command::Serve(a) => commands::serve::run(a),
        Command::Init(a) => commands::init::run(a),
        Command::Lsp(a) => commands::lsp::run(a),
        Command::Catalog(a) => commands::catalog::run(a),
        Command::Push(a) => commands::registry::push(a),
        Command::Pull(a) => commands::registry::pull(a),
        Command::Sign(a) => commands::registry::sign(a),
    };
    match result {
        Ok(Outcome::Clean) => ExitCode::SUCCESS,
        Ok(Outcome::Findings) => ExitCode::from(1),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            // Errors quote file names, documents and policy text: escaped for the terminal.
            let text = report::clean_lines(&format!("{e:#}"));
            if text.starts_with("error:") {
                eprintln!("{text}");
            } else {
                eprintln!("error: {text}");
            }
            ExitCode::from(2)
        }
    }
}

/// Logs go to stderr, filtered by `COMPUTEGUARD_LOG` (default `warn`; `info` for
/// `serve`, which logs one line per admission request). `serve --log-format json`
/// writes one JSON object per line.
fn init_logging(command: &Command) {
    let (default, json) = match command {
        Command::Serve(a) => ("info", a.log_format == commands::serve::LogFormat::Json),
        _ => ("warn", false),
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("COMPUTEGUARD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().with_current_span(false).init();
    } else {
        builder
            .with_ansi(
                std::io::IsTerminal::is_terminal(&std::io::stderr())
                    && std::env::var_os("NO_COLOR").is_none(),
            )
            .init();
    }
}

/// A `println!` into a pipe whose reader has gone (`| head`) panics. The commands that
/// still print that way stop there, without a panic message: exit 0 for listings, 2 for
/// `check` and `test`, whose verdict was not reached (a closed pipe is never a pass).
/// `check`, `rules` and `explain` write instead of printing and see the error themselves.
fn quiet_broken_pipe(verdict_pending: bool) {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(if verdict_pending { 2 } else { 0 });
        }
        default(info);
    }));
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Today's date in UTC.
pub fn today() -> String {
    chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string()
}

/// The config named by `--config`, else `computeguard.yaml` found upward from the
/// working directory, else defaults.
pub fn load_config(explicit: Option<&PathBuf>) -> anyhow::Result<config::Config> {
    match explicit {
        Some(p) => Ok(config::Config::load(p)?),
        None => {
            let cwd = std::env::current_dir()?;
            match config::Config::discover(&cwd) {
                Some(p) => Ok(config::Config::load(&p)?),
                None => Ok(config::Config::default()),
            }
        }
    }
}

/// Default of `check --memory-limit-mib`: the engine's default sandbox memory.
pub const DEFAULT_MEMORY_LIMIT_MIB: u32 = 64;

/// Limits of the engine that `check` lets the user set.
#[derive(Clone, Copy, Debug)]
pub struct EngineLimits {
    /// Linear memory of each policy instance, in MiB (`--memory-limit-mib`).
    pub memory_limit_mib: u32,
}

impl Default for EngineLimits {
    fn default() -> Self {
        EngineLimits {
            memory_limit_mib: DEFAULT_MEMORY_LIMIT_MIB,
        }
    }
}

/// The engine the CLI uses: default limits and cache.
pub fn engine() -> anyhow::Result<computeguard_engine::Engine> {
    engine_with(EngineLimits::default())
}

/// The engine with `limits`, default cache.
pub fn engine_with(limits: EngineLimits) -> anyhow::Result<computeguard_engine::Engine> {
    let memory_limit = usize::try_from(u64::from(limits.memory_limit_mib) << 20)?;
    Ok(computeguard_engine::Engine::new(
        computeguard_engine::EngineConfig {
            memory_limit,
            ..computeguard_engine::EngineConfig::default()
        },
    )?)
}
