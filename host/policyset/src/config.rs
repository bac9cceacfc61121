//! `computeguard.yaml`: the project configuration. Every key is optional; see
//! `docs/configuration.md` for the defaults.

use computeguard_decode::decode_yaml;
use computeguard_policy_core::region;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file name looked up from the working directory upwards.
pub const FILE_NAME: &str = "computeguard.yaml";

/// A severity override: a level, or `off` (the same type the webhook applies).
pub use crate::Level;

/// What reading `computeguard.yaml` returns: the configuration, or the problem at its
/// file and line.
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// A policy file, optionally pinned: `path.wasm@sha256:<hex>` on the command line or
/// `{path: ..., digest: sha256:<hex>}` in the config. For a `.wasm` the digest is of
/// the component bytes; for a `.yaml` pack, of the pack source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyRef {
    /// The file, relative to the config file's folder when named there.
    pub path: PathBuf,
    /// `sha256:<hex>` the file must have, when pinned.
    pub digest: Option<String>,
}

impl PolicyRef {
    /// Parses `FILE` or `FILE@sha256:<64 hex>`.
    pub fn parse(s: &str) -> Result<PolicyRef, InvalidDigest> {
        match s.rsplit_once("@sha256:") {
            Some((path, hex)) => Ok(PolicyRef {
                path: PathBuf::from(path),
                digest: Some(check_digest(&format!("sha256:{hex}"))?),
            }),
            None => Ok(PolicyRef {
                path: PathBuf::from(s),
                digest: None,
            }),
        }
    }
}

/// A pin that is not `sha256:` followed by 64 hex digits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{digest}` is not a digest; expected sha256: followed by 64 hex digits")]
pub struct InvalidDigest {
    /// The pin as written.
    pub digest: String,
}

/// `sha256:<64 hex>`, lower-cased.
fn check_digest(d: &str) -> Result<String, InvalidDigest> {
    let hex = d.strip_prefix("sha256:").unwrap_or("");
    if hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(d.to_ascii_lowercase())
    } else {
        Err(InvalidDigest {
            digest: d.to_string(),
        })
    }
}

/// A config `ignore:` entry.
#[derive(Clone, Debug)]
pub struct Ignore {
    /// The rule id the entry silences.
    pub rule: String,
    /// Files the entry covers (globs relative to the config file's folder).
    pub paths: globset::GlobSet,
    /// RFC 6901 JSON pointer: only findings at this field or below it (for JSON files,
    /// which have no comments for inline suppressions).
    pub pointer: Option<String>,
    /// Why, for reviewers (required).
    pub reason: String,
}

/// The parsed configuration.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Where the file was read from (None: defaults).
    pub path: Option<PathBuf>,
    /// The evaluation date (`asOf`), `YYYY-MM-DD`.
    pub as_of: Option<String>,
    /// Allowed regions (`regions.allowed`), as written.
    pub regions_allowed: Vec<String>,
    /// Allowed geographies (`regions.allowedGeographies`).
    pub allowed_geographies: Vec<String>,
    /// Levels by rule id (`rules:`).
    pub rules: BTreeMap<String, Level>,
    /// Line of each `rules:` and `ignore:` rule id, for "unknown rule" errors.
    pub rule_lines: Vec<(String, u32)>,
    /// Extra policies, relative to the config file, optionally pinned to a digest.
    pub policies: Vec<PolicyRef>,
    /// Settings per policy name (built-in regions settings are derived from `regions`).
    pub settings: BTreeMap<String, Value>,
    /// `ignore:` entries.
    pub ignore: Vec<Ignore>,
    /// The `webhook:` section (used by `computeguard serve`).
    pub webhook: crate::WebhookConfig,
    /// Catalog overlays and Azure facts (`catalog:`, `azure:`), paths resolved against
    /// the configuration's directory.
    pub context: crate::context::ContextFiles,
    /// Signature checks and registry settings for `oci://` references (`verify:`,
    /// `registries:`).
    pub oci: crate::verify::OciConfig,
}

/// A problem in `computeguard.yaml`, with its file and line, and what was expected.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// A date that is not `YYYY-MM-DD`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a date; expected YYYY-MM-DD")]
pub struct InvalidDate {
    /// The date as written.
    pub text: String,
}

/// `YYYY-MM-DD`, checked and normalised (`asOf`, `--as-of`).
pub fn parse_date(s: &str) -> std::result::Result<String, InvalidDate> {
    chrono::NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d")
        .map(|d| d.format("%Y-%m-%d").to_string())
        .map_err(|_| InvalidDate {
            text: s.to_string(),
        })
}

impl Config {
    /// Finds `computeguard.yaml` in `start` or its ancestors.
    pub fn discover(start: &Path) -> Option<PathBuf> {
        start
            .ancestors()
            .map(|d| d.join(FILE_NAME))
            .find(|p| p.is_file())
    }

    /// Reads and validates a config file. Errors name the file and line.
    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read config `{}`: {e}", path.display())))?;
        Self::parse(path, &text)
    }

    /// Parses the text of a config file at `path` (for positions in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Config> {
        let file = path.display().to_string();
        let docs = decode_yaml(text)
            .map_err(|e| ConfigError(format!("{file}:{}:{}: {}", e.line, e.column, e.message)))?;
        let mut cfg = Config {
            path: Some(path.to_path_buf()),
            ..Config::default()
        };
        let Some(doc) = docs.into_iter().next() else {
            return Ok(cfg);
        };
        let pos = &doc.positions;
        let at = |ptr: &str| {
            pos.locate(ptr)
                .map_or(String::new(), |s| format!(":{}:{}", s.line, s.column))
        };
        let fail = |ptr: &str, msg: String| -> ConfigError {
            ConfigError(format!("{file}{}: {msg}", at(ptr)))
        };
        let Some(root) = doc.value.as_object() else {
            return Err(fail("", "the configuration must be a mapping".into()));
        };
        for key in root.keys() {
            if ![
                "asOf",
                "regions",
                "rules",
                "policies",
                "settings",
                "ignore",
                "webhook",
                "catalog",
                "azure",
                "verify",
                "registries",
            ]
            .contains(&key.as_str())
            {
                return Err(fail(
                    &format!("/{key}"),
                    format!(
                        "unknown key `{key}`; expected asOf, regions, rules, policies, settings, ignore, webhook, catalog, azure, verify or registries"
                    ),
                ));
            }
        }
        if let Some(v) = root.get("asOf") {
            let s = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            parse_date(&s).map_err(|e| fail("/asOf", e.to_string()))?;
            cfg.as_of = Some(s);
        }
        if let Some(r) = root.get("regions") {
            let Some(r) = r.as_object() else {
                return Err(fail(
                    "/regions",
                    "`regions` must be a mapping with `allowed` and/or `allowedGeographies`".into(),
                ));
            };
            for (k, v) in r {
                let list = strings(v).ok_or_else(|| {
                    fail(
                        &format!("/regions/{k}"),
                        format!("`regions.{k}` must be a list of strings"),
                    )
                })?;
                for (i, name) in list.iter().enumerate() {
                    let known = match k.as_str() {
                        "allowed" => region::region(name).is_some(),
                        _ => region::is_group(name),
                    };
                    if !known {
                        let what = if k == "allowed" {
                            "Azure region"
                        } else {
                            "region group (geography, country, area, EU or EEA)"
                        };
                        return Err(fail(
                            &format!("/regions/{k}/{i}"),
                            format!("`{name}` is not a known {what}"),
                        ));
                    }
                }
                match k.as_str() {
                    "allowed" => cfg.regions_allowed = list,
                    "allowedGeographies" => cfg.allowed_geographies = list,
                    _ => {
                        return Err(fail(
                            &format!("/regions/{k}"),
                            format!(
                                "unknown key `regions.{k}`; expected allowed or allowedGeographies"
                            ),
                        ));
                    }
                }
            }
        }
        if let Some(r) = root.get("rules") {
            let Some(r) = r.as_object() else {
                return Err(fail(
                    "/rules",
                    "`rules` must map rule ids to error, warning, info or off".into(),
                ));
            };
            for (id, v) in r {
                let level = v.as_str().and_then(Level::parse).ok_or_else(|| {
                    fail(
                        &format!("/rules/{id}"),
                        format!("rule `{id}`: expected error, warning, info or off"),
                    )
                })?;
                cfg.rules.insert(id.clone(), level);
                let line = pos.locate(&format!("/rules/{id}")).map_or(0, |s| s.line);
                cfg.rule_lines.push((id.clone(), line));
            }
        }
        if let Some(p) = root.get("policies") {
            let what = "`policies` must be a list of pack (.yaml) or component (.wasm) paths, or {path, digest} mappings";
            let list = p.as_array().ok_or_else(|| fail("/policies", what.into()))?;
            let base = path.parent().unwrap_or(Path::new("."));
            for (i, entry) in list.iter().enumerate() {
                let ptr = format!("/policies/{i}");
                let (file, digest) = match entry {
                    Value::String(s) => (s.clone(), None),
                    Value::Object(m) => {
                        let file = m
                            .get("path")
                            .and_then(Value::as_str)
                            .ok_or_else(|| fail(&ptr, "a pinned policy needs `path`".into()))?;
                        let digest = match m.get("digest") {
                            Some(Value::String(d)) => Some(
                                check_digest(d)
                                    .map_err(|e| fail(&format!("{ptr}/digest"), e.to_string()))?,
                            ),
                            Some(_) => {
                                return Err(fail(
                                    &format!("{ptr}/digest"),
                                    "`digest` must be a string".into(),
                                ));
                            }
                            None => None,
                        };
                        (file.to_string(), digest)
                    }
                    _ => return Err(fail(&ptr, what.into())),
                };
                cfg.policies.push(PolicyRef {
                    path: resolve(base, &file),
                    digest,
                });
            }
        }
        let base = path.parent().unwrap_or(Path::new("."));
        if let Some(c) = root.get("catalog") {
            cfg.context.catalog = strings(c)
                .ok_or_else(|| {
                    fail(
                        "/catalog",
                        "`catalog` must be a list of catalog overlay files (YAML or JSON)".into(),
                    )
                })?
                .iter()
                .map(|f| resolve(base, f))
                .collect();
        }
        cfg.oci = crate::verify::parse(root, base, &fail)?;
        if let Some(a) = root.get("azure") {
            let Some(a) = a.as_object() else {
                return Err(fail(
                    "/azure",
                    "`azure` must be a mapping with `skus`, `usage`, `mlUsage`, `workspaceRegion` and/or `prices`".into(),
                ));
            };
            for (k, v) in a {
                match k.as_str() {
                    "skus" => {
                        cfg.context.skus = strings(v)
                            .ok_or_else(|| {
                                fail(
                                    "/azure/skus",
                                    "`azure.skus` must be a list of `az vm list-skus --all -o json` outputs".into(),
                                )
                            })?
                            .iter()
                            .map(|f| base.join(f))
                            .collect();
                    }
                    "usage" => {
                        let what = "`azure.usage` must map each region to its `az vm list-usage --location REGION -o json` output";
                        let m = v
                            .as_object()
                            .ok_or_else(|| fail("/azure/usage", what.into()))?;
                        for (region, file) in m {
                            let ptr = format!("/azure/usage/{region}");
                            if region::region(region).is_none() {
                                return Err(fail(
                                    &ptr,
                                    format!("`{region}` is not a known Azure region"),
                                ));
                            }
                            let file = file.as_str().ok_or_else(|| fail(&ptr, what.into()))?;
                            cfg.context.usage.push((region.clone(), base.join(file)));
                        }
                    }
                    "prices" => {
                        cfg.context.prices = strings(v)
                            .ok_or_else(|| {
                                fail(
                                    "/azure/prices",
                                    "`azure.prices` must be a list of Azure Retail Prices API pages (JSON, as curl saves https://prices.azure.com/api/retail/prices; docs/cost.md)".into(),
                                )
                            })?
                            .iter()
                            .map(|f| base.join(f))
                            .collect();
                    }
                    "mlUsage" => {
                        let what = "`azure.mlUsage` must map each region to its `az ml compute list-usage --location REGION -o json` output";
                        let m = v
                            .as_object()
                            .ok_or_else(|| fail("/azure/mlUsage", what.into()))?;
                        for (region, file) in m {
                            let ptr = format!("/azure/mlUsage/{region}");
                            if region::region(region).is_none() {
                                return Err(fail(
                                    &ptr,
                                    format!("`{region}` is not a known Azure region"),
                                ));
                            }
                            let file = file.as_str().ok_or_else(|| fail(&ptr, what.into()))?;
                            cfg.context.ml_usage.push((region.clone(), base.join(file)));
                        }
                    }
                    "workspaceRegion" => {
                        let what = "`azure.workspaceRegion` must be the region of the Azure ML workspace (eastus, East US)";
                        let r = v
                            .as_str()
                            .ok_or_else(|| fail("/azure/workspaceRegion", what.into()))?;
                        let known = region::region(r).ok_or_else(|| {
                            fail(
                                "/azure/workspaceRegion",
                                format!("`{r}` is not a known Azure region"),
                            )
                        })?;
                        cfg.context.workspace_region = Some(known.name.to_string());
                    }
                    _ => {
                        return Err(fail(
                            &format!("/azure/{k}"),
                            format!(
                                "unknown key `azure.{k}`; expected skus, usage, mlUsage, workspaceRegion or prices"
                            ),
                        ));
                    }
                }
            }
        }
        if let Some(s) = root.get("settings") {
            let Some(s) = s.as_object() else {
                return Err(fail(
                    "/settings",
                    "`settings` must map policy names to settings objects".into(),
                ));
            };
            cfg.settings = s.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        }
        if let Some(i) = root.get("ignore") {
            let Some(list) = i.as_array() else {
                return Err(fail(
                    "/ignore",
                    "`ignore` must be a list of {rule, paths, pointer, reason}".into(),
                ));
            };
            for (n, entry) in list.iter().enumerate() {
                let ptr = format!("/ignore/{n}");
                let obj: &Map<String, Value> = entry
                    .as_object()
                    .ok_or_else(|| fail(&ptr, "an ignore entry must be a mapping".into()))?;
                let rule = obj
                    .get("rule")
                    .and_then(Value::as_str)
                    .ok_or_else(|| fail(&ptr, "an ignore entry needs `rule`".into()))?;
                let line = pos.locate(&format!("{ptr}/rule")).map_or(0, |s| s.line);
                cfg.rule_lines.push((rule.to_string(), line));
                let reason = obj
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if reason.trim().is_empty() {
                    return Err(fail(&ptr, format!("ignoring `{rule}` needs a `reason`")));
                }
                let globs = obj
                    .get("paths")
                    .map_or(Some(vec!["**".to_string()]), strings)
                    .ok_or_else(|| {
                        fail(
                            &format!("{ptr}/paths"),
                            "`paths` must be a list of glob patterns".into(),
                        )
                    })?;
                let pointer = match obj.get("pointer") {
                    None => None,
                    Some(Value::String(p)) if p.is_empty() || p.starts_with('/') => Some(p.clone()),
                    Some(_) => {
                        return Err(fail(
                            &format!("{ptr}/pointer"),
                            "`pointer` must be a JSON pointer such as `/resources/0/properties/vmSize`".into(),
                        ));
                    }
                };
                let mut set = globset::GlobSetBuilder::new();
                for g in &globs {
                    set.add(globset::Glob::new(g).map_err(|e| {
                        fail(&format!("{ptr}/paths"), format!("bad glob `{g}`: {e}"))
                    })?);
                }
                cfg.ignore.push(Ignore {
                    rule: rule.to_string(),
                    paths: set.build().map_err(|e| fail(&ptr, e.to_string()))?,
                    pointer,
                    reason: reason.to_string(),
                });
            }
        }
        if let Some(w) = root.get("webhook") {
            cfg.webhook = crate::WebhookConfig::from_json(w).map_err(|e| {
                fail(
                    &format!("/webhook{}", e.pointer),
                    format!("webhook: {}", e.message),
                )
            })?;
            if let Some(ca) = &cfg.webhook.client_ca {
                let base = path.parent().unwrap_or(Path::new("."));
                cfg.webhook.client_ca = Some(base.join(ca));
            }
            for id in cfg.webhook.enforcement.keys() {
                let line = pos
                    .locate(&format!("/webhook/enforcement/{id}"))
                    .map_or(0, |s| s.line);
                cfg.rule_lines.push((id.clone(), line));
            }
        }
        Ok(cfg)
    }

    /// Settings for the built-in policy, from `regions`.
    pub fn builtin_settings(&self) -> Value {
        let mut regions = Map::new();
        if !self.regions_allowed.is_empty() {
            regions.insert("allowed".into(), self.regions_allowed.clone().into());
        }
        if !self.allowed_geographies.is_empty() {
            regions.insert(
                "allowedGeographies".into(),
                self.allowed_geographies.clone().into(),
            );
        }
        let mut s = Map::new();
        if !regions.is_empty() {
            s.insert("regions".into(), Value::Object(regions));
        }
        Value::Object(s)
    }

    /// Whether a config `ignore:` entry silences `rule` for `path` (relative to the config)
    /// at the JSON pointer `at` (an entry's `pointer` matches that field and below it).
    /// Globs are relative to the directory of the config file, wherever `check` runs from.
    pub fn ignored(&self, rule: &str, path: &Path, at: &str) -> Option<&Ignore> {
        if self.ignore.is_empty() {
            return None;
        }
        let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let file = abs(path);
        let base = match &self.path {
            Some(cfg) => abs(cfg
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))),
            None => abs(Path::new(".")),
        };
        let rel = file.strip_prefix(&base).unwrap_or(&file);
        let under = |p: &str| {
            at == p || p.is_empty() || at.strip_prefix(p).is_some_and(|rest| rest.starts_with('/'))
        };
        self.ignore.iter().find(|i| {
            i.rule == rule && i.paths.is_match(rel) && i.pointer.as_deref().is_none_or(under)
        })
    }

    /// Rule ids named in `rules:` or `ignore:` that no loaded policy defines, with their
    /// lines: a typo there would otherwise silently do nothing.
    pub fn unknown_rules<'a>(&'a self, known: &[String]) -> Vec<(&'a str, u32)> {
        self.rule_lines
            .iter()
            .filter(|(id, _)| !known.contains(id))
            .map(|(id, line)| (id.as_str(), *line))
            .collect()
    }
}

/// A path the configuration names, against its directory; an `oci://` reference stays
/// as written (the oci module resolves it).
fn resolve(base: &Path, file: &str) -> PathBuf {
    if computeguard_oci::Reference::is_oci(file) {
        PathBuf::from(file)
    } else {
        base.join(file)
    }
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_config_parses() -> Result<()> {
        let text = "asOf: 2026-01-31\nregions:\n  allowed: [eastus, West Europe]\nrules:\n  min-nodes-zero: error\n  sku-unknown: off\nignore:\n  - rule: min-nodes-zero\n    paths: [\"infra/legacy/**\"]\n    reason: warm pool\n";
        let c = Config::parse(Path::new("/repo/computeguard.yaml"), text)?;
        assert_eq!(c.as_of.as_deref(), Some("2026-01-31"));
        assert_eq!(c.rules.get("sku-unknown"), Some(&Level::Off));
        assert_eq!(
            c.builtin_settings(),
            serde_json::json!({"regions": {"allowed": ["eastus", "West Europe"]}})
        );
        assert!(
            c.ignored("min-nodes-zero", Path::new("/repo/infra/legacy/a.yml"), "")
                .is_some()
        );
        assert!(
            c.ignored("min-nodes-zero", Path::new("/repo/infra/new/a.yml"), "")
                .is_none()
        );
        let known = vec!["min-nodes-zero".to_string()];
        assert_eq!(c.unknown_rules(&known), vec![("sku-unknown", 6)]);
        Ok(())
    }

    #[test]
    fn ignore_pointer_covers_the_field_and_below() -> Result<()> {
        let text = "ignore:\n  - rule: sku-retired\n    paths: [\"arm/*.json\"]\n    pointer: /resources/0/properties\n    reason: replaced in Q3\n";
        let c = Config::parse(Path::new("/repo/computeguard.yaml"), text)?;
        let file = Path::new("/repo/arm/gpu.json");
        for (at, expect) in [
            ("/resources/0/properties", true),
            ("/resources/0/properties/hardwareProfile/vmSize", true),
            ("/resources/0/propertiesX", false),
            ("/resources/1/properties/vmSize", false),
            ("", false),
        ] {
            assert_eq!(c.ignored("sku-retired", file, at).is_some(), expect, "{at}");
        }
        let err = Config::parse(
            Path::new("cg.yaml"),
            "ignore:\n  - rule: x\n    pointer: resources/0\n    reason: r\n",
        )
        .expect_err("bad pointer");
        assert!(
            err.to_string()
                .starts_with("cg.yaml:3:5: `pointer` must be a JSON pointer"),
            "{err}"
        );
        Ok(())
    }

    #[test]
    fn azure_prices_are_files_beside_the_config() -> Result<()> {
        let c = Config::parse(
            Path::new("/repo/computeguard.yaml"),
            "azure:\n  prices: [prices/eastus-1.json, prices/eastus-2.json]\n",
        )?;
        assert_eq!(
            c.context.prices,
            [
                PathBuf::from("/repo/prices/eastus-1.json"),
                PathBuf::from("/repo/prices/eastus-2.json")
            ]
        );
        assert!(c.context.is_empty(), "prices are not a policy's context");
        let err = Config::parse(Path::new("cg.yaml"), "azure:\n  prices: eastus.json\n")
            .expect_err("not a list");
        assert!(
            err.to_string().starts_with(
                "cg.yaml:2:3: `azure.prices` must be a list of Azure Retail Prices API pages"
            ),
            "{err}"
        );
        Ok(())
    }

    #[test]
    fn errors_name_file_and_line() {
        let err =
            Config::parse(Path::new("cg.yaml"), "regions:\n  allowed: eastus\n").expect_err("bad");
        assert_eq!(
            err.to_string(),
            "cg.yaml:2:3: `regions.allowed` must be a list of strings"
        );
        let err = Config::parse(Path::new("cg.yaml"), "rules:\n  min-nodes-zero: loud\n")
            .expect_err("bad");
        assert!(
            err.to_string()
                .starts_with("cg.yaml:2:3: rule `min-nodes-zero`"),
            "{err}"
        );
        let err = Config::parse(
            Path::new("cg.yaml"),
            "regions:\n  allowed: [eastus, westeurop]\n",
        )
        .expect_err("bad");
        assert_eq!(
            err.to_string(),
            "cg.yaml:2:21: `westeurop` is not a known Azure region"
        );
        let err = Config::parse(
            Path::new("cg.yaml"),
            "regions:\n  allowedGeographies: [Eurpoe]\n",
        )
        .expect_err("bad");
        assert!(
            err.to_string()
                .contains("`Eurpoe` is not a known region group"),
            "{err}"
        );
        assert!(
            Config::parse(
                Path::new("cg.yaml"),
                "regions:\n  allowedGeographies: [europe, EU, Germany, United States]\n"
            )
            .is_ok()
        );
        let err = Config::parse(Path::new("cg.yaml"), "asof: 2026-01-01\n").expect_err("bad");
        assert!(err.to_string().contains("unknown key `asof`"), "{err}");
        let err = Config::parse(Path::new("cg.yaml"), "ignore:\n  - rule: x\n").expect_err("bad");
        assert!(err.to_string().contains("needs a `reason`"), "{err}");
    }
}
