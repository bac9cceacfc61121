//! The endpoints: `/healthz`, `/readyz`, `/metrics` and the admission endpoints
//! `/validate` and `/mutate`, which read the body (bounded in size and time), decide it
//! (`review`, on the lanes of `lanes`) and answer, logging and counting each request.

use crate::config::Enforcement;
use crate::decision::Mode;
use crate::{PolicySet, State, admission, idle, metrics, review};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, StatusCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tracing::{error, info, warn};

type Response = hyper::Response<Full<Bytes>>;

pub(crate) fn respond(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response {
    let mut r = hyper::Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = hyper::header::HeaderValue::from_str(content_type) {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

pub(crate) fn problem(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({"error": message}).to_string();
    respond(status, "application/json", body)
}

/// The answer of `/healthz`, `/readyz` and `/metrics` (on either port).
pub(crate) fn probe(state: &State, path: &str) -> Option<Response> {
    Some(match path {
        "/healthz" => respond(StatusCode::OK, "text/plain", "ok\n"),
        "/readyz" => {
            if state.ready.load(Ordering::SeqCst) {
                respond(StatusCode::OK, "text/plain", "ready\n")
            } else {
                respond(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "not ready\n")
            }
        }
        "/metrics" => respond(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            with_loader_metrics(state.metrics.encode(), &state.loader.metrics_text()),
        ),
        _ => return None,
    })
}

/// `answering` counts this connection's requests that arrived in full and are being
/// answered: while it is not 0 the connection is not closed to make room.
pub(crate) async fn handle(
    state: &State,
    req: hyper::Request<Incoming>,
    answering: &Arc<AtomicUsize>,
) -> Response {
    if let Some(response) = probe(state, req.uri().path()) {
        return response;
    }
    let endpoint = match req.uri().path() {
        "/validate" => "validate",
        "/mutate" => "mutate",
        _ => {
            return problem(
                StatusCode::NOT_FOUND,
                "no such endpoint; use /validate or /mutate",
            );
        }
    };
    if req.method() != Method::POST {
        return problem(
            StatusCode::METHOD_NOT_ALLOWED,
            "admission endpoints accept POST with an AdmissionReview",
        );
    }
    let started = Instant::now();
    let response = admit(state, req, endpoint, answering).await;
    state
        .metrics
        .duration
        .get_or_create(&metrics::EndpointLabels { endpoint })
        .observe(started.elapsed().as_secs_f64());
    response
}

fn count(state: &State, endpoint: &'static str, verdict: &'static str) {
    state
        .metrics
        .requests
        .get_or_create(&metrics::RequestLabels { endpoint, verdict })
        .inc();
}

async fn admit(
    state: &State,
    req: hyper::Request<Incoming>,
    endpoint: &'static str,
    answering: &Arc<AtomicUsize>,
) -> Response {
    let started = Instant::now();
    let set = state.set.load_full();
    let limit = set.webhook.limits.max_request_bytes;
    let body_timeout = set.webhook.limits.body_read_timeout;
    let read = tokio::time::timeout(body_timeout, read_body(req.into_body(), limit)).await;
    // From here on the request has arrived: its connection is not closed to make room.
    let _answering = idle::InFlight::new(answering.clone());
    let body = match read {
        Err(_) => {
            count(state, endpoint, "slow_body");
            let mut r = problem(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "the request body did not arrive within {} ms (webhook.limits.bodyReadTimeoutMs)",
                    body_timeout.as_millis()
                ),
            );
            r.headers_mut().insert(
                hyper::header::CONNECTION,
                hyper::header::HeaderValue::from_static("close"),
            );
            return r;
        }
        Ok(Ok(Some(b))) => b,
        Ok(Ok(None)) => {
            count(state, endpoint, "too_large");
            return problem(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "the request body is larger than the {limit}-byte limit (webhook.limits.maxRequestBytes)"
                ),
            );
        }
        Ok(Err(e)) => {
            count(state, endpoint, "bad_request");
            return problem(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the request body: {e}"),
            );
        }
    };
    let mode = if endpoint == "mutate" {
        Mode::Mutate
    } else {
        Mode::Validate
    };
    let review = match admission::parse(&body) {
        Ok(r) => r,
        Err(e) => {
            count(state, endpoint, "bad_request");
            warn!(endpoint, error = %e, "malformed admission request");
            return problem(StatusCode::BAD_REQUEST, &e.to_string());
        }
    };
    // The native pre-check (exclusions, decoding, "does it declare compute?") runs
    // here; only requests that need the policies are evaluated (see `lanes`).
    let decision = match review::prepare(&set, &review, mode) {
        review::Precheck::Decided(decision) => decision,
        review::Precheck::Evaluate(prepared) => {
            // The whole request must be answered within the evaluation timeout from its
            // arrival: every policy is stopped at this instant, and a request with no
            // answer then is answered per the failure mode.
            let deadline = started + set.webhook.limits.evaluation_timeout;
            let unanswered = |why| unevaluated(state, &set, &review.uid, endpoint, mode, why);
            // With `maxInFlight` evaluations running, wait for one to end for at most
            // half the budget (a burst waits milliseconds), then answer as overloaded.
            let wait_until = started + set.webhook.limits.evaluation_timeout / 2;
            let Ok(slot) = state.lanes.admit(wait_until).await else {
                return unanswered(Unevaluated::Overloaded);
            };
            let evaluation = {
                let set = set.clone();
                async move {
                    let _slot = slot;
                    review::evaluate(&set, prepared, mode, deadline).await
                }
            };
            // A little grace past the deadline for a slow-lane evaluation to hand its
            // answer over.
            let grace = Duration::from_millis(100);
            match state.lanes.run(evaluation, deadline + grace).await {
                Ok(decision) => decision,
                Err(_) => return unanswered(Unevaluated::TimedOut),
            }
        }
    };
    let uid = &review.uid;
    let verdict = decision.verdict.as_str();
    count(state, endpoint, verdict);
    if let Some(result) = decision.template {
        state
            .metrics
            .templates
            .get_or_create(&metrics::TemplateLabels { result })
            .inc();
    }
    for f in &decision.findings {
        state
            .metrics
            .violations
            .get_or_create(&metrics::ViolationLabels {
                rule: f.rule.clone(),
                enforcement: f.enforcement.as_str(),
            })
            .inc();
        if f.enforcement == Enforcement::Audit || set.webhook.dry_run {
            info!(%uid, rule = %f.rule, enforcement = f.enforcement.as_str(), message = %f.message, "finding");
        }
    }
    for f in &decision.failures {
        state
            .metrics
            .errors
            .get_or_create(&metrics::ErrorLabels {
                policy: f.policy.clone(),
                kind: f.kind,
            })
            .inc();
        error!(%uid, policy = %f.policy, kind = f.kind, error = %f.message, "policy evaluation failed");
    }
    for policy in &decision.refused_patches {
        warn!(%uid, %policy, "the policy returned a JSON Patch; refused (only computeguard's own mutations are sent)");
    }
    info!(
        %uid,
        endpoint,
        kind = %review.kind.kind,
        namespace = review.namespace.as_deref().unwrap_or(""),
        name = review.name.as_deref().unwrap_or(""),
        operation = ?review.operation,
        verdict,
        skipped = decision.skipped.unwrap_or(""),
        template = decision.template.unwrap_or(""),
        findings = decision.findings.len(),
        duration_us = started.elapsed().as_micros() as u64,
        "admission"
    );
    json_ok(&decision.answer.to_review(uid))
}

/// Why a request got no evaluation.
#[derive(Clone, Copy)]
enum Unevaluated {
    /// `maxInFlight` evaluations were already running.
    Overloaded,
    /// The evaluation did not finish within `evaluationTimeoutMs` (or panicked: the
    /// answer is the same, per the failure mode).
    TimedOut,
}

/// Answers a request that was not evaluated, per the failure mode.
fn unevaluated(
    state: &State,
    set: &PolicySet,
    uid: &str,
    endpoint: &'static str,
    mode: Mode,
    why: Unevaluated,
) -> Response {
    let (label, answer) = match why {
        Unevaluated::Overloaded => ("overloaded", review::overloaded(set, mode)),
        Unevaluated::TimedOut => ("timeout", review::timed_out(set, mode)),
    };
    count(state, endpoint, label);
    warn!(%uid, endpoint, allowed = answer.allowed, "{label}: answered per failurePolicy");
    json_ok(&answer.to_review(uid))
}

/// Reads a body of at most `limit` bytes; `Ok(None)` when it is larger. An oversize
/// body is still read (and discarded) up to 4 x `limit`, so the client gets the 413
/// on a connection it has finished writing to, instead of a reset mid-write.
async fn read_body(mut body: Incoming, limit: usize) -> Result<Option<Bytes>, hyper::Error> {
    let mut buf = Vec::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            total += data.len();
            if total <= limit {
                buf.extend_from_slice(&data);
            } else if total > limit.saturating_mul(4) {
                break;
            }
        }
    }
    Ok((total <= limit).then(|| Bytes::from(buf)))
}

fn json_ok(v: &serde_json::Value) -> Response {
    respond(StatusCode::OK, "application/json", v.to_string())
}

/// The server's exposition with the loader's families inserted before `# EOF`.
fn with_loader_metrics(mut text: String, extra: &str) -> String {
    if extra.is_empty() {
        return text;
    }
    let eof = text.strip_suffix("# EOF\n").map(str::len);
    if let Some(at) = eof {
        text.truncate(at);
    }
    text.push_str(extra);
    if eof.is_some() {
        text.push_str("# EOF\n");
    }
    text
}
