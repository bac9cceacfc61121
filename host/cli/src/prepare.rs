//! What `check` sets up before it evaluates, shared with `plan`, which evaluates the same
//! change again with each candidate size: the configuration, the inputs, the policies with
//! the change-wide settings (quota sums, cross-file facts) and their context.

use crate::{load_config, policies, scan, today};
use std::path::PathBuf;

/// What `check` sets up before it evaluates, and `plan` evaluates with too: the
/// configuration (with the workspace region the files state), the evaluation date, the
/// inputs, the policies with the change-wide settings (quota sums, cross-file facts) and
/// the context they were given, the var and parameter files.
pub struct Prepared {
    pub config: crate::config::Config,
    pub as_of: String,
    /// The paths as given (`.` when none), with the templates `.bicepparam` files name.
    pub paths: Vec<PathBuf>,
    pub files: Vec<scan::Input>,
    pub skipped: Vec<crate::report::Skipped>,
    pub loaded: Vec<policies::Loaded>,
    pub context: Option<computeguard_policyset::context::LoadedContext>,
    pub var_files: Vec<(PathBuf, serde_json::Value)>,
    pub param_files: Vec<scan::ParamFile>,
    pub max_file_bytes: u64,
}

/// The options [`prepare`] reads, as `check` and `plan` take them.
pub struct PrepareArgs<'a> {
    pub paths: &'a [PathBuf],
    pub stdin_filename: Option<&'a str>,
    pub config: Option<&'a PathBuf>,
    pub policies: &'a [crate::config::PolicyRef],
    pub as_of: Option<&'a str>,
    pub var_files: &'a [PathBuf],
    pub param_files: &'a [PathBuf],
    pub memory_limit_mib: u32,
    pub max_file_mib: u32,
}

impl Prepared {
    /// A scan of the inputs with the loaded policies, as `check` runs it.
    pub fn scan(&self) -> scan::Scan<'_> {
        scan::Scan {
            policies: &self.loaded,
            config: &self.config,
            as_of: self.as_of.clone(),
            max_file_bytes: self.max_file_bytes,
            var_files: self.var_files.clone(),
            param_files: self.param_files.clone(),
        }
    }

    /// A scan without policies, for the native pre-passes (quota sums, cross-file facts).
    pub fn reader(&self) -> scan::Scan<'_> {
        scan::Scan {
            policies: &[],
            ..self.scan()
        }
    }
}

pub fn prepare(args: &PrepareArgs<'_>) -> anyhow::Result<Prepared> {
    let mut config = load_config(args.config)?;
    let as_of = args
        .as_of
        .map(str::to_string)
        .or_else(|| config.as_of.clone())
        .unwrap_or_else(today);
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.to_vec()
    };
    let max_file_bytes = u64::from(args.max_file_mib) << 20;
    // Parameters files named among the paths apply as `--param-file`s do (before them); a
    // `.bicepparam` named alone brings the template it is `using`.
    let (mut param_files, targets) = scan::named_param_files(&paths)?;
    for p in args.param_files {
        param_files.push(scan::read_param_file(p)?);
    }
    let paths: Vec<PathBuf> = paths.into_iter().chain(targets).collect();
    let (files, skipped) = scan::collect(&paths, args.stdin_filename, max_file_bytes)?;
    // An Azure ML workspace among the files gives its region to the deployments and jobs,
    // whose files name none; one region only (several workspaces: the configuration's).
    let regions = scan::Scan {
        policies: &[],
        config: &config,
        as_of: as_of.clone(),
        max_file_bytes,
        var_files: Vec::new(),
        param_files: param_files.clone(),
    }
    .workspace_regions(&files);
    if let Some(region) = regions.first().filter(|_| regions.len() == 1) {
        config.context.workspace_region = Some(region.clone());
    }
    let engine = crate::engine_with(crate::EngineLimits {
        memory_limit_mib: args.memory_limit_mib,
    })?;
    let (mut loaded, context) = policies::load_all_with_context(&engine, &config, args.policies)?;
    // A `.tfvars` named among the paths is a var file too, after the `--var-file`s.
    let mut var_file_paths = args.var_files.to_vec();
    var_file_paths.extend(scan::named_var_files(&paths));
    let var_files = var_file_paths
        .iter()
        .map(|p| scan::read_var_file(p).map(|v| (p.clone(), v)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let Some(context) = &context {
        let reader = scan::Scan {
            policies: &[],
            config: &config,
            as_of: as_of.clone(),
            max_file_bytes,
            var_files: var_files.clone(),
            param_files: param_files.clone(),
        };
        judge_quota_together(&mut loaded, context, &reader, &files)?;
    }
    // The rules about AKS pools that look across files (gpu-driver-ownership,
    // mig-autoscale) get what the whole change holds (scan/change.rs).
    if ["gpu-driver-ownership", "mig-autoscale"]
        .iter()
        .any(|r| config.rules.get(*r) != Some(&computeguard_policyset::Level::Off))
    {
        let facts = scan::Scan {
            policies: &[],
            config: &config,
            as_of: as_of.clone(),
            max_file_bytes,
            var_files: var_files.clone(),
            param_files: param_files.clone(),
        }
        .change_facts(&files);
        scan::change::give_to_builtin(&mut loaded, &facts);
    }
    Ok(Prepared {
        config,
        as_of,
        paths,
        files,
        skipped,
        loaded,
        context,
        var_files,
        param_files,
        max_file_bytes,
    })
}

/// Gives the built-in policy what the whole change declares of each quota counter
/// (`settings.quota.declaredInRun`, see `scan/quota.rs`), so that `quota-sufficient`
/// judges what several files add together. Only with usage lists in the context and the
/// rule on; the context is installed in this process for the sums. `reader` (a scan without
/// policies) reads the files as check does: its configuration, var files and parameter files.
fn judge_quota_together(
    loaded: &mut [policies::Loaded],
    context: &computeguard_policyset::context::LoadedContext,
    reader: &scan::Scan<'_>,
    files: &[scan::Input],
) -> anyhow::Result<()> {
    if context.usage_regions.is_empty()
        || reader.config.rules.get("quota-sufficient") == Some(&computeguard_policyset::Level::Off)
    {
        return Ok(());
    }
    let parsed = computeguard_policy_core::context::parse(context.context.json())?;
    computeguard_policy_core::context::install(parsed)?;
    let totals = reader.declared_quota(files);
    if totals.is_empty() {
        return Ok(());
    }
    give_quota_totals(loaded, &totals)
}

/// Sets `settings.quota.declaredInRun` of the built-in policies to `totals`.
pub fn give_quota_totals(
    loaded: &mut [policies::Loaded],
    totals: &scan::quota::Totals,
) -> anyhow::Result<()> {
    for l in loaded.iter_mut().filter(|l| l.builtin) {
        let mut settings = l.settings.clone();
        if let Some(object) = settings.as_object_mut() {
            let quota = object
                .entry("quota")
                .or_insert_with(|| serde_json::json!({}));
            if let Some(quota) = quota.as_object_mut() {
                quota.insert("declaredInRun".into(), serde_json::to_value(totals)?);
            }
        }
        l.settings_text = settings.to_string();
        l.settings = settings;
    }
    Ok(())
}
