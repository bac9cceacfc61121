//! `/metrics` in the Prometheus text format.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Labels of `computeguard_admission_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// validate or mutate.
    pub endpoint: &'static str,
    /// allowed, warned, denied, skipped, or bad_request, too_large, slow_body, overloaded, timeout.
    pub verdict: &'static str,
}

/// Labels of `computeguard_admission_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabels {
    /// validate or mutate.
    pub endpoint: &'static str,
}

/// Labels of `computeguard_violations_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ViolationLabels {
    /// The id of the rule that fired.
    pub rule: String,
    /// deny, warn or audit.
    pub enforcement: &'static str,
}

/// Labels of `computeguard_evaluation_errors_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The policy's name, or computeguard when the host could not decode the object.
    pub policy: String,
    /// timeout, trap, memory, output, policy, host or input.
    pub kind: &'static str,
}

/// Labels of `computeguard_reloads_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReloadLabels {
    /// success or failure.
    pub result: &'static str,
}

/// Labels of `computeguard_connections_open`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PortLabels {
    /// webhook (the HTTPS admission port) or probes (the plain-HTTP probe port).
    pub port: &'static str,
}

/// Labels of `computeguard_connections_refused_total` and
/// `computeguard_connections_evicted_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConnectionLabels {
    /// webhook or probes.
    pub port: &'static str,
    /// Refused: all_busy, peer_all_busy or peer_rate. Evicted: max_connections or
    /// max_connections_per_peer.
    pub reason: &'static str,
}

/// Labels of `computeguard_template_cache_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TemplateLabels {
    /// hit (answered from a template seen before: its policies' answers, or that it declares
    /// no compute) or miss (the template was evaluated).
    pub result: &'static str,
}

fn latency_histogram() -> Histogram {
    // 50 µs .. 2.5 s: the interesting range is well under a millisecond.
    Histogram::new([
        0.00005, 0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.0025, 0.005, 0.01,
        0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    ])
}

/// The server's metrics.
pub struct Metrics {
    registry: Registry,
    /// `computeguard_admission_requests_total`: admission requests answered, by
    /// endpoint and verdict (malformed, oversize, slow, overloaded and timed-out ones too).
    pub requests: Family<RequestLabels, Counter>,
    /// `computeguard_admission_duration_seconds`: seconds from a request's arrival to
    /// its answer, by endpoint; buckets from 50 µs to 2.5 s.
    pub duration: Family<EndpointLabels, Histogram, fn() -> Histogram>,
    /// `computeguard_violations_total`: findings, by rule and enforcement.
    pub violations: Family<ViolationLabels, Counter>,
    /// `computeguard_evaluation_errors_total`: evaluations that gave no verdict, by
    /// policy and kind.
    pub errors: Family<ErrorLabels, Counter>,
    /// `computeguard_reloads_total`: policy and configuration reloads, by result.
    pub reloads: Family<ReloadLabels, Counter>,
    /// `computeguard_policies_loaded`: policies in the set now serving.
    pub policies: Gauge,
    /// `computeguard_connections_open`: connections open now, by port.
    pub connections_open: Family<PortLabels, Gauge>,
    /// `computeguard_connections_refused_total`: connections closed on accept (no room
    /// could be made, or the address opened connections too fast), by port and reason.
    pub connections_refused: Family<ConnectionLabels, Counter>,
    /// `computeguard_connections_evicted_total`: quiet connections closed to make room
    /// for a new one, by port and reason.
    pub connections_evicted: Family<ConnectionLabels, Counter>,
    /// `computeguard_connections_waited_total`: new connections that waited for room
    /// (every connection that could make room was new or answering) and got in.
    pub connections_waited: Family<PortLabels, Counter>,
    /// `computeguard_template_cache_total`: requests answered from the template cache (hit:
    /// the name-blind policies' answers, or that the template declares no compute) or whose
    /// name-blind policies evaluated the object's template (miss).
    pub templates: Family<TemplateLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("computeguard");
        let requests = Family::<RequestLabels, Counter>::default();
        let duration = Family::<EndpointLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let violations = Family::<ViolationLabels, Counter>::default();
        let errors = Family::<ErrorLabels, Counter>::default();
        let reloads = Family::<ReloadLabels, Counter>::default();
        let policies = Gauge::default();
        let connections_open = Family::<PortLabels, Gauge>::default();
        let connections_refused = Family::<ConnectionLabels, Counter>::default();
        let connections_evicted = Family::<ConnectionLabels, Counter>::default();
        let connections_waited = Family::<PortLabels, Counter>::default();
        let templates = Family::<TemplateLabels, Counter>::default();
        registry.register(
            "admission_requests",
            "Admission requests answered, by endpoint and verdict",
            requests.clone(),
        );
        registry.register(
            "admission_duration_seconds",
            "Time from request to answer, server-side",
            duration.clone(),
        );
        registry.register(
            "violations",
            "Findings reported, by rule and enforcement (deny, warn, audit)",
            violations.clone(),
        );
        registry.register(
            "evaluation_errors",
            "Policy evaluations that gave no verdict, by policy and kind (timeout, trap, memory, output, policy, host, input)",
            errors.clone(),
        );
        registry.register(
            "reloads",
            "Policy and configuration reloads, by result",
            reloads.clone(),
        );
        registry.register("policies_loaded", "Policies serving", policies.clone());
        registry.register(
            "connections_open",
            "Connections open, by port",
            connections_open.clone(),
        );
        registry.register(
            "connections_refused",
            "Connections closed on accept, by port and reason: all_busy and peer_all_busy when every connection that could make room stayed new or answering for newConnectionGraceMs, peer_rate when the address's connections closed unserved faster than connectionRatePerPeer",
            connections_refused.clone(),
        );
        registry.register(
            "connections_evicted",
            "Quiet connections closed to make room for a new one, by port and reason (max_connections, max_connections_per_peer)",
            connections_evicted.clone(),
        );
        registry.register(
            "connections_waited",
            "New connections that waited for room (every connection that could make room was new or answering) and got in, by port",
            connections_waited.clone(),
        );
        registry.register(
            "template_cache",
            "Requests answered from the template cache (hit: the name-blind policies' answers, or that the template declares no compute) or whose name-blind policies evaluated the object's template (miss)",
            templates.clone(),
        );
        Metrics {
            registry,
            requests,
            duration,
            violations,
            errors,
            reloads,
            policies,
            connections_open,
            connections_refused,
            connections_evicted,
            connections_waited,
            templates,
        }
    }
}

impl Metrics {
    /// The exposition text.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
