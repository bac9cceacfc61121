//! The `webhook:` section of `computeguard.yaml`. Every key is optional; the defaults
//! are the `Default` impls below and are listed in `docs/deploy.md`.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// What a finding of a rule does to an admission request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enforcement {
    /// Reject the request (`allowed: false`, HTTP status code 403 in `status.code`).
    Deny,
    /// Admit it with a warning that `kubectl` shows.
    Warn,
    /// Admit it silently; the finding is logged and counted in `/metrics`.
    Audit,
}

impl Enforcement {
    /// Parses `deny`, `warn` or `audit`.
    pub fn parse(s: &str) -> Option<Enforcement> {
        match s {
            "deny" => Some(Enforcement::Deny),
            "warn" => Some(Enforcement::Warn),
            "audit" => Some(Enforcement::Audit),
            _ => None,
        }
    }

    /// `deny`, `warn` or `audit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Enforcement::Deny => "deny",
            Enforcement::Warn => "warn",
            Enforcement::Audit => "audit",
        }
    }
}

/// What a policy that fails (times out, traps, returns an error) does to the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureMode {
    /// Fail closed: deny the request, naming the policy and the error.
    Fail,
    /// Fail open: admit it with a warning naming the policy and the error.
    Ignore,
}

impl FailureMode {
    /// Parses `Fail` or `Ignore`.
    pub fn parse(s: &str) -> Option<FailureMode> {
        match s {
            "Fail" => Some(FailureMode::Fail),
            "Ignore" => Some(FailureMode::Ignore),
            _ => None,
        }
    }
}

/// The toleration the `gpuToleration` mutation adds (a Kubernetes `Toleration`).
#[derive(Clone, Debug, PartialEq)]
pub struct Toleration(pub Map<String, Value>);

impl Default for Toleration {
    /// `sku=gpu:NoSchedule`, the taint the AKS GPU guidance puts on GPU node pools.
    fn default() -> Self {
        let mut m = Map::new();
        m.insert("key".into(), "sku".into());
        m.insert("operator".into(), "Equal".into());
        m.insert("value".into(), "gpu".into());
        m.insert("effect".into(), "NoSchedule".into());
        Toleration(m)
    }
}

/// Opt-in mutations (all off by default).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mutations {
    /// Add this toleration to GPU-requesting pods that `gpu-workload-scheduling` flags.
    pub gpu_toleration: Option<Toleration>,
    /// Set the minimum node count that `min-nodes-zero` flags to 0 (1 on a pool marked
    /// as running the NVIDIA GPU Operator).
    pub min_nodes_zero: bool,
}

/// Request limits.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Largest request body accepted (default 3 MiB, the API server's own request limit).
    pub max_request_bytes: usize,
    /// Wall-time budget of one policy evaluation (default 2 s; keep it below the
    /// webhook's `timeoutSeconds`, 5 s in the shipped manifests).
    pub evaluation_timeout: Duration,
    /// Requests being evaluated at once (default 8 x CPUs, at least 32); one more waits
    /// for a slot up to half of `evaluation_timeout` (a burst of reviews waits
    /// milliseconds), then is answered as overloaded, per the failure mode. Each is stopped when its
    /// `evaluation_timeout` is spent and then gets the failure mode's answer. The bound
    /// is on memory (each holds its body and a sandbox instance), not on concurrency: an
    /// API server keeps many requests in flight on its connections, and turning a
    /// momentary burst away would deny requests answered in a millisecond (the soak saw
    /// 1.5 % of requests refused at 1,000 req/s with 2 x CPUs).
    pub max_in_flight: usize,
    /// Threads of the slow lane (default: the CPUs this process may use): an
    /// evaluation still running after its first millisecond moves there, off the
    /// threads that accept connections and answer `/healthz` (see
    /// `computeguard_server::lanes`). Fixed at start; a reload does not change it.
    pub workers: usize,
    /// Open connections at once on the webhook port (default 1,024). At the cap, the
    /// connection that has been quiet longest and is not answering a request is closed
    /// to make room; a new connection is refused only when every open one is answering
    /// (see `computeguard_server::connections`). Fixed at start.
    pub max_connections: usize,
    /// Open connections at once from one client IP address (default 256, a quarter of
    /// `max_connections`): a peer at its limit closes its own quietest connection, so
    /// one pod cannot hold the whole budget. Fixed at start.
    pub max_connections_per_peer: usize,
    /// Connections a second from one client IP address that may close without a request
    /// answered 2xx (default 50, bursts of twice that): each such connection spends one
    /// token, and an address with none left is closed on accept until it refills, so a
    /// client that reopens whatever is closed, or sends nothing or garbage, cannot
    /// flood the server with TLS handshakes. A connection that is served spends nothing:
    /// an API server's burst of valid reviews is never refused for rate. Fixed at start.
    pub connection_rate_per_peer: usize,
    /// How long a new connection may take to be served (default 2 s) before it can be
    /// closed to make room; a newcomer that finds no connection it may close waits at
    /// most this long for one before it is refused. Fixed at start.
    pub new_connection_grace: Duration,
    /// Time a client has to send a request's body once its headers arrived (default
    /// 10 s); a later body is answered 408 and the connection closed.
    pub body_read_timeout: Duration,
    /// Time a client has to send a request's headers (HTTP/1.1; default 10 s).
    pub header_read_timeout: Duration,
    /// A connection with no request in flight and no bytes moving for this long is
    /// closed (default 60 s).
    pub idle_timeout: Duration,
    /// Linear memory of one policy sandbox (default 64 MiB).
    pub memory_bytes: usize,
    /// Templates whose answers the webhook keeps (default 1,024; 0 turns the template
    /// cache off): the Pods of one ReplicaSet, one object applied again, are then
    /// judged by one evaluation (see `computeguard_server::template`).
    pub template_cache_entries: usize,
    /// Bytes of templates and answers kept at most (default 16 MiB).
    pub template_cache_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_bytes: 3 << 20,
            evaluation_timeout: Duration::from_secs(2),
            max_in_flight: (8 * cpus()).max(32),
            workers: cpus(),
            max_connections: 1024,
            max_connections_per_peer: 256,
            connection_rate_per_peer: 50,
            new_connection_grace: Duration::from_secs(2),
            body_read_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            memory_bytes: 64 << 20,
            template_cache_entries: 1024,
            template_cache_bytes: 16 << 20,
        }
    }
}

/// CPUs this process may use (cgroup quota included).
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// The keys of `webhook.limits`, for error messages.
const LIMIT_KEYS: &str = "maxRequestBytes, evaluationTimeoutMs, maxInFlight, workers, maxConnections, maxConnectionsPerPeer, connectionRatePerPeer, newConnectionGraceMs, headerReadTimeoutMs, bodyReadTimeoutMs, idleTimeoutMs, memoryMiB, templateCacheEntries, templateCacheMiB";

/// The parsed `webhook:` section.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WebhookConfig {
    /// Report what would be denied (as warnings and logs) but admit everything.
    pub dry_run: bool,
    /// Per-rule enforcement; a rule not listed follows its severity:
    /// error -> deny, warning -> warn, info -> audit.
    pub enforcement: BTreeMap<String, Enforcement>,
    /// What a failing policy does, by default (`Fail`).
    pub failure_policy: FailureModeDefault,
    /// Per-policy override of `failure_policy`, by policy name.
    pub policy_failure: BTreeMap<String, FailureMode>,
    /// Namespaces never evaluated (admitted at once).
    pub exclude_namespaces: Vec<String>,
    /// Objects carrying any of these labels (key and value) are admitted at once.
    pub exclude_labels: BTreeMap<String, String>,
    /// Opt-in mutations (`webhook.mutations`).
    pub mutations: Mutations,
    /// Request and connection limits (`webhook.limits`).
    pub limits: Limits,
    /// PEM file of the CA whose client certificates authenticate the API server
    /// (`webhook.clientCA`, against the configuration's directory). An authenticated
    /// connection is never counted towards its address's limits. Read at start.
    pub client_ca: Option<std::path::PathBuf>,
    /// Refuse a TLS handshake without a client certificate signed by `client_ca`
    /// (`webhook.requireClientCert`, default false).
    pub require_client_cert: bool,
}

/// `Fail` unless configured otherwise: a policy that cannot give a verdict must not
/// let a request through unnoticed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FailureModeDefault(pub FailureMode);

impl Default for FailureModeDefault {
    fn default() -> Self {
        FailureModeDefault(FailureMode::Fail)
    }
}

/// A problem in the `webhook:` section: the JSON pointer below `/webhook` and what was
/// expected. The CLI turns the pointer into a line of `computeguard.yaml`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ConfigError {
    /// JSON pointer of the problem below `/webhook`.
    pub pointer: String,
    /// What was wrong and what was expected.
    pub message: String,
}

fn err(pointer: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        pointer: pointer.into(),
        message: message.into(),
    }
}

impl WebhookConfig {
    /// The keys of the section, for "unknown key" messages and docs.
    pub const KEYS: &'static [&'static str] = &[
        "dryRun",
        "enforcement",
        "failurePolicy",
        "policyFailure",
        "exclude",
        "mutations",
        "limits",
        "clientCA",
        "requireClientCert",
    ];

    /// Parses the value of `webhook:`. Pointers in errors are relative to `/webhook`.
    pub fn from_json(v: &Value) -> Result<WebhookConfig, ConfigError> {
        let mut cfg = WebhookConfig::default();
        let root = v
            .as_object()
            .ok_or_else(|| err("", "`webhook` must be a mapping"))?;
        for (key, value) in root {
            let at = format!("/{key}");
            match key.as_str() {
                "dryRun" => {
                    cfg.dry_run = value
                        .as_bool()
                        .ok_or_else(|| err(&at, "`dryRun` must be true or false"))?;
                }
                "enforcement" => {
                    let map = value.as_object().ok_or_else(|| {
                        err(
                            &at,
                            "`enforcement` must map rule ids to deny, warn or audit",
                        )
                    })?;
                    for (rule, e) in map {
                        let e = e.as_str().and_then(Enforcement::parse).ok_or_else(|| {
                            err(
                                format!("{at}/{rule}"),
                                format!("rule `{rule}`: expected deny, warn or audit"),
                            )
                        })?;
                        cfg.enforcement.insert(rule.clone(), e);
                    }
                }
                "failurePolicy" => {
                    cfg.failure_policy = FailureModeDefault(
                        value
                            .as_str()
                            .and_then(FailureMode::parse)
                            .ok_or_else(|| err(&at, "`failurePolicy` must be Fail or Ignore"))?,
                    );
                }
                "policyFailure" => {
                    let map = value.as_object().ok_or_else(|| {
                        err(
                            &at,
                            "`policyFailure` must map policy names to Fail or Ignore",
                        )
                    })?;
                    for (policy, m) in map {
                        let m = m.as_str().and_then(FailureMode::parse).ok_or_else(|| {
                            err(
                                format!("{at}/{policy}"),
                                format!("policy `{policy}`: expected Fail or Ignore"),
                            )
                        })?;
                        cfg.policy_failure.insert(policy.clone(), m);
                    }
                }
                "exclude" => parse_exclude(&mut cfg, value, &at)?,
                "mutations" => parse_mutations(&mut cfg, value, &at)?,
                "limits" => parse_limits(&mut cfg, value, &at)?,
                "clientCA" => {
                    let path =
                        value
                            .as_str()
                            .filter(|p| !p.trim().is_empty())
                            .ok_or_else(|| {
                                err(
                                    &at,
                                    "`clientCA` must be the path of a PEM CA certificate file",
                                )
                            })?;
                    cfg.client_ca = Some(path.into());
                }
                "requireClientCert" => {
                    cfg.require_client_cert = value
                        .as_bool()
                        .ok_or_else(|| err(&at, "`requireClientCert` must be true or false"))?;
                }
                _ => {
                    return Err(err(
                        &at,
                        format!(
                            "unknown key `webhook.{key}`; expected one of {}",
                            Self::KEYS.join(", ")
                        ),
                    ));
                }
            }
        }
        if cfg.require_client_cert && cfg.client_ca.is_none() {
            return Err(err(
                "/requireClientCert",
                "`requireClientCert: true` needs `clientCA`, the CA that signs the API server's client certificate",
            ));
        }
        Ok(cfg)
    }

    /// The failure mode of a policy.
    pub fn failure_mode(&self, policy: &str) -> FailureMode {
        self.policy_failure
            .get(policy)
            .copied()
            .unwrap_or(self.failure_policy.0)
    }
}

fn parse_exclude(cfg: &mut WebhookConfig, v: &Value, at: &str) -> Result<(), ConfigError> {
    let map = v.as_object().ok_or_else(|| {
        err(
            at,
            "`exclude` must be a mapping with `namespaces` and/or `labels`",
        )
    })?;
    for (key, value) in map {
        let here = format!("{at}/{key}");
        match key.as_str() {
            "namespaces" => {
                let list = value
                    .as_array()
                    .ok_or_else(|| err(&here, "`namespaces` must be a list of names"))?;
                for (i, n) in list.iter().enumerate() {
                    let n = n.as_str().ok_or_else(|| {
                        err(format!("{here}/{i}"), "a namespace must be a string")
                    })?;
                    cfg.exclude_namespaces.push(n.to_string());
                }
            }
            "labels" => {
                let m = value
                    .as_object()
                    .ok_or_else(|| err(&here, "`labels` must map label keys to values"))?;
                for (k, val) in m {
                    let val = match val {
                        Value::String(s) => s.clone(),
                        Value::Bool(_) | Value::Number(_) => val.to_string(),
                        _ => {
                            return Err(err(
                                format!("{here}/{k}"),
                                "a label value must be a string",
                            ));
                        }
                    };
                    cfg.exclude_labels.insert(k.clone(), val);
                }
            }
            _ => {
                return Err(err(
                    &here,
                    format!("unknown key `exclude.{key}`; expected namespaces or labels"),
                ));
            }
        }
    }
    Ok(())
}

fn parse_mutations(cfg: &mut WebhookConfig, v: &Value, at: &str) -> Result<(), ConfigError> {
    let map = v.as_object().ok_or_else(|| {
        err(
            at,
            "`mutations` must be a mapping with `gpuToleration` and/or `minNodesZero`",
        )
    })?;
    for (key, value) in map {
        let here = format!("{at}/{key}");
        match key.as_str() {
            "gpuToleration" => {
                cfg.mutations.gpu_toleration = match value {
                    Value::Bool(false) | Value::Null => None,
                    Value::Bool(true) => Some(Toleration::default()),
                    Value::Object(m) => {
                        for (k, v) in m {
                            if !["key", "operator", "value", "effect", "tolerationSeconds"]
                                .contains(&k.as_str())
                            {
                                return Err(err(
                                    format!("{here}/{k}"),
                                    format!(
                                        "`{k}` is not a toleration field; expected key, operator, value, effect or tolerationSeconds"
                                    ),
                                ));
                            }
                            if k != "tolerationSeconds" && !v.is_string() {
                                return Err(err(
                                    format!("{here}/{k}"),
                                    format!("`{k}` must be a string"),
                                ));
                            }
                        }
                        Some(Toleration(m.clone()))
                    }
                    _ => {
                        return Err(err(
                            &here,
                            "`gpuToleration` must be true, false or a toleration {key, operator, value, effect}",
                        ));
                    }
                };
            }
            "minNodesZero" => {
                cfg.mutations.min_nodes_zero = value
                    .as_bool()
                    .ok_or_else(|| err(&here, "`minNodesZero` must be true or false"))?;
            }
            _ => {
                return Err(err(
                    &here,
                    format!("unknown mutation `{key}`; expected gpuToleration or minNodesZero"),
                ));
            }
        }
    }
    Ok(())
}

fn parse_limits(cfg: &mut WebhookConfig, v: &Value, at: &str) -> Result<(), ConfigError> {
    let map = v
        .as_object()
        .ok_or_else(|| err(at, format!("`limits` must be a mapping with {LIMIT_KEYS}")))?;
    for (key, value) in map {
        let here = format!("{at}/{key}");
        // 0 turns the template cache off; every other limit must allow something.
        if key == "templateCacheEntries" {
            cfg.limits.template_cache_entries = value
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| {
                    err(
                        &here,
                        "`templateCacheEntries` must be an integer, 0 or more",
                    )
                })?;
            continue;
        }
        let n = value
            .as_u64()
            .filter(|n| *n > 0)
            .ok_or_else(|| err(&here, format!("`{key}` must be a positive integer")))?;
        match key.as_str() {
            "maxRequestBytes" => cfg.limits.max_request_bytes = n as usize,
            "evaluationTimeoutMs" => cfg.limits.evaluation_timeout = Duration::from_millis(n),
            "maxInFlight" => cfg.limits.max_in_flight = n as usize,
            "workers" => cfg.limits.workers = n as usize,
            "maxConnections" => cfg.limits.max_connections = n as usize,
            "maxConnectionsPerPeer" => cfg.limits.max_connections_per_peer = n as usize,
            "connectionRatePerPeer" => cfg.limits.connection_rate_per_peer = n as usize,
            "newConnectionGraceMs" => {
                cfg.limits.new_connection_grace = Duration::from_millis(n.min(60_000))
            }
            "bodyReadTimeoutMs" => cfg.limits.body_read_timeout = Duration::from_millis(n),
            "headerReadTimeoutMs" => cfg.limits.header_read_timeout = Duration::from_millis(n),
            "idleTimeoutMs" => cfg.limits.idle_timeout = Duration::from_millis(n),
            "memoryMiB" => {
                cfg.limits.memory_bytes = usize::try_from(n)
                    .ok()
                    .filter(|n| *n <= 4096)
                    .map(|n| n << 20)
                    .ok_or_else(|| err(&here, "`memoryMiB` must be at most 4096"))?
            }
            "templateCacheMiB" => {
                cfg.limits.template_cache_bytes = usize::try_from(n)
                    .ok()
                    .filter(|n| *n <= 1024)
                    .map(|n| n << 20)
                    .ok_or_else(|| err(&here, "`templateCacheMiB` must be at most 1024"))?
            }
            _ => {
                return Err(err(
                    &here,
                    format!("unknown key `limits.{key}`; expected one of {LIMIT_KEYS}"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_are_safe() {
        let c = WebhookConfig::from_json(&json!({})).expect("empty is valid");
        assert!(!c.dry_run);
        assert_eq!(c.failure_mode("any"), FailureMode::Fail);
        assert_eq!(c.limits.max_request_bytes, 3 << 20);
        assert_eq!(c.mutations, Mutations::default());
    }

    #[test]
    fn parses_every_key() {
        let c = WebhookConfig::from_json(&json!({
            "dryRun": true,
            "enforcement": {"min-nodes-zero": "deny", "sku-unknown": "audit"},
            "failurePolicy": "Ignore",
            "policyFailure": {"org-rules": "Fail"},
            "exclude": {"namespaces": ["kube-system"], "labels": {"computeguard.io/exclude": "true"}},
            "mutations": {"gpuToleration": true, "minNodesZero": true},
            "limits": {"maxRequestBytes": 1024, "evaluationTimeoutMs": 500, "maxInFlight": 8,
                       "maxConnectionsPerPeer": 4, "bodyReadTimeoutMs": 250}
        }))
        .expect("valid");
        assert!(c.dry_run);
        assert_eq!(c.enforcement["min-nodes-zero"], Enforcement::Deny);
        assert_eq!(c.failure_mode("org-rules"), FailureMode::Fail);
        assert_eq!(c.failure_mode("computeguard-builtin"), FailureMode::Ignore);
        assert_eq!(c.exclude_namespaces, vec!["kube-system"]);
        assert_eq!(c.exclude_labels["computeguard.io/exclude"], "true");
        assert_eq!(c.mutations.gpu_toleration, Some(Toleration::default()));
        assert_eq!(c.limits.evaluation_timeout, Duration::from_millis(500));
        assert_eq!(c.limits.max_in_flight, 8);
        assert_eq!(c.limits.max_connections_per_peer, 4);
        assert_eq!(c.limits.body_read_timeout, Duration::from_millis(250));
    }

    #[test]
    fn errors_point_at_the_key() {
        let e = WebhookConfig::from_json(&json!({"enforcement": {"x": "block"}}))
            .expect_err("must be refused");
        assert_eq!(e.pointer, "/enforcement/x");
        assert!(e.message.contains("deny, warn or audit"), "{e}");
        let e = WebhookConfig::from_json(&json!({"limits": {"maxInFlight": 0}}))
            .expect_err("must be refused");
        assert_eq!(e.pointer, "/limits/maxInFlight");
        let e = WebhookConfig::from_json(&json!({"dryrun": true})).expect_err("must be refused");
        assert!(e.message.contains("unknown key `webhook.dryrun`"), "{e}");
        let e = WebhookConfig::from_json(&json!({"mutations": {"gpuToleration": {"kye": "a"}}}))
            .expect_err("must be refused");
        assert_eq!(e.pointer, "/mutations/gpuToleration/kye");
    }
}
