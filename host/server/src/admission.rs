//! AdmissionReview `admission.k8s.io/v1`: the request fields the webhook reads and the
//! response the API server expects.
//!
//! Hand-written serde types rather than `kube-core`'s: the webhook reads ten fields, and
//! `kube-core` would bring the whole of `k8s-openapi` into the build for them.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// The only AdmissionReview `apiVersion` the webhook reads and the one it answers with.
pub const API_VERSION: &str = "admission.k8s.io/v1";

/// Why a body is not an AdmissionReview the webhook can answer. Each becomes HTTP 400
/// with this message; the server keeps serving.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BadRequest {
    /// The body does not parse as an AdmissionReview; holds the JSON parser's message.
    #[error("the body is not JSON: {0}")]
    NotJson(String),
    /// Another `apiVersion` or `kind` than `admission.k8s.io/v1` `AdmissionReview`;
    /// holds the two as sent (empty when absent).
    #[error(
        "expected apiVersion `admission.k8s.io/v1` and kind `AdmissionReview`, got `{0}` `{1}`"
    )]
    WrongType(String, String),
    /// The AdmissionReview carries no `request` to answer.
    #[error("the AdmissionReview has no `request`")]
    NoRequest,
    /// `request.uid` is absent or empty, so no answer could be matched to the request.
    #[error("`request.uid` is missing or empty; the API server matches answers by uid")]
    NoUid,
    /// `request.operation` is none of the four; holds it as sent (empty when absent).
    #[error("`request.operation` `{0}` is not CREATE, UPDATE, DELETE or CONNECT")]
    BadOperation(String),
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "apiVersion", default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(borrow, default)]
    request: Option<RequestIn<'a>>,
}

#[derive(Deserialize)]
struct RequestIn<'a> {
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    kind: Option<GroupVersionKind>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    operation: Option<String>,
    #[serde(borrow, default)]
    object: Option<&'a RawValue>,
    #[serde(rename = "dryRun", default)]
    dry_run: Option<bool>,
}

/// The type of the object under review (`request.kind`); each part empty when absent.
#[derive(Deserialize, Default, Clone, Debug, PartialEq)]
pub struct GroupVersionKind {
    /// API group: `apps`, `batch`; empty for the core group (`Pod`).
    #[serde(default)]
    pub group: String,
    /// API version within the group: `v1`.
    #[serde(default)]
    pub version: String,
    /// Kind: `Deployment`, `Pod`.
    #[serde(default)]
    pub kind: String,
}

/// What the API server is doing to the object (`request.operation`). Only CREATE and
/// UPDATE are evaluated; the others are admitted as skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// `CREATE`: a new object.
    Create,
    /// `UPDATE`: a change to an existing object.
    Update,
    /// `DELETE`: never checked.
    Delete,
    /// `CONNECT` (exec, attach, port-forward to a pod): never checked.
    Connect,
}

/// The parts of an admission request the webhook uses. `object` borrows the body.
#[derive(Debug)]
pub struct Review<'a> {
    /// The request's id (never empty), echoed in the response.
    pub uid: String,
    /// The object's type (all parts empty when the request omits it).
    pub kind: GroupVersionKind,
    /// The object's namespace; `None` when absent or empty (cluster-scoped objects).
    pub namespace: Option<String>,
    /// The object's name; `None` when absent or empty (a CREATE with `generateName`).
    pub name: Option<String>,
    /// What the API server is doing to the object.
    pub operation: Operation,
    /// The object as sent (absent for DELETE and CONNECT).
    pub object: Option<&'a RawValue>,
    /// The API server's dry-run flag: side effects must be skipped (there are none).
    pub dry_run: bool,
}

/// Parses and checks an AdmissionReview body.
pub fn parse(body: &[u8]) -> Result<Review<'_>, BadRequest> {
    let env: Envelope<'_> =
        serde_json::from_slice(body).map_err(|e| BadRequest::NotJson(e.to_string()))?;
    let api_version = env.api_version.unwrap_or_default();
    let kind = env.kind.unwrap_or_default();
    if api_version != API_VERSION || kind != "AdmissionReview" {
        return Err(BadRequest::WrongType(api_version, kind));
    }
    let req = env.request.ok_or(BadRequest::NoRequest)?;
    let uid = req.uid.filter(|u| !u.is_empty()).ok_or(BadRequest::NoUid)?;
    let operation = match req.operation.as_deref().unwrap_or_default() {
        "CREATE" => Operation::Create,
        "UPDATE" => Operation::Update,
        "DELETE" => Operation::Delete,
        "CONNECT" => Operation::Connect,
        other => return Err(BadRequest::BadOperation(other.to_string())),
    };
    Ok(Review {
        uid,
        kind: req.kind.unwrap_or_default(),
        namespace: req.namespace.filter(|n| !n.is_empty()),
        name: req.name.filter(|n| !n.is_empty()),
        operation,
        object: req.object.filter(|o| o.get() != "null"),
        dry_run: req.dry_run.unwrap_or(false),
    })
}

/// The answer to one request.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Answer {
    /// Whether the API server may go ahead with the request.
    pub allowed: bool,
    /// HTTP-style code and message for a denial (403 for violations, 500 for a failed
    /// policy under `failurePolicy: Fail`).
    pub status: Option<(u16, String)>,
    /// Shown to the user by kubectl: `warn` findings, failures under
    /// `failurePolicy: Ignore`, and dry-run's would-be denials.
    pub warnings: Vec<String>,
    /// A JSON Patch (RFC 6902) array, sent base64-encoded with `patchType: JSONPatch`.
    pub patch: Option<Value>,
}

impl Answer {
    /// Admits the request with no status, warning or patch.
    pub fn allow() -> Answer {
        Answer {
            allowed: true,
            ..Answer::default()
        }
    }

    /// The AdmissionReview response body for `uid`.
    pub fn to_review(&self, uid: &str) -> Value {
        let mut response = json!({"uid": uid, "allowed": self.allowed});
        if let Some((code, message)) = &self.status {
            response["status"] = json!({"code": code, "reason": reason(*code), "message": message});
        }
        if !self.warnings.is_empty() {
            response["warnings"] = json!(self.warnings);
        }
        if let Some(patch) = &self.patch {
            use base64::Engine as _;
            let text = patch.to_string();
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(text));
        }
        json!({"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response})
    }
}

/// The `metav1.Status` reason for a code, as controller-runtime webhooks send it:
/// kubectl prints it (`Error from server (Forbidden): ...`).
pub fn reason(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        403 => "Forbidden",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(request: Value) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"apiVersion": API_VERSION, "kind": "AdmissionReview", "request": request}),
        )
        .expect("serialises")
    }

    #[test]
    fn reads_the_request() {
        let b = body(json!({
            "uid": "705ab4f5", "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "namespace": "ml", "name": "x", "operation": "CREATE", "dryRun": true,
            "object": {"kind": "Deployment"}
        }));
        let r = parse(&b).expect("valid");
        assert_eq!(r.uid, "705ab4f5");
        assert_eq!(r.kind.kind, "Deployment");
        assert_eq!(r.operation, Operation::Create);
        assert_eq!(r.namespace.as_deref(), Some("ml"));
        assert!(r.dry_run);
        assert_eq!(
            r.object.map(RawValue::get),
            Some(r#"{"kind":"Deployment"}"#)
        );
    }

    #[test]
    fn refuses_what_it_cannot_answer() {
        assert!(matches!(parse(b"not json"), Err(BadRequest::NotJson(_))));
        let wrong = br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"a"}}"#;
        assert_eq!(
            parse(wrong).expect_err("must be refused"),
            BadRequest::WrongType("admission.k8s.io/v1beta1".into(), "AdmissionReview".into())
        );
        assert_eq!(
            parse(&body(json!({"operation": "CREATE"}))).expect_err("must be refused"),
            BadRequest::NoUid
        );
        assert_eq!(
            parse(&body(json!({"uid": "a", "operation": "PATCH"}))).expect_err("must be refused"),
            BadRequest::BadOperation("PATCH".into())
        );
        assert_eq!(
            parse(br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#)
                .expect_err("must be refused"),
            BadRequest::NoRequest
        );
    }

    #[test]
    fn response_carries_uid_status_warnings_and_patch() {
        let a = Answer {
            allowed: false,
            status: Some((403, "no".into())),
            warnings: vec!["w".into()],
            patch: Some(json!([{"op": "add", "path": "/a", "value": 1}])),
        };
        let v = a.to_review("u1");
        assert_eq!(v["apiVersion"], API_VERSION);
        assert_eq!(v["response"]["uid"], "u1");
        assert_eq!(v["response"]["allowed"], false);
        assert_eq!(v["response"]["status"]["code"], 403);
        assert_eq!(v["response"]["status"]["reason"], "Forbidden");
        assert_eq!(v["response"]["warnings"][0], "w");
        assert_eq!(v["response"]["patchType"], "JSONPatch");
        use base64::Engine as _;
        let raw = base64::engine::general_purpose::STANDARD
            .decode(v["response"]["patch"].as_str().expect("string"))
            .expect("base64");
        let p: Value = serde_json::from_slice(&raw).expect("json");
        assert_eq!(p[0]["path"], "/a");
        let allow = Answer::allow().to_review("u2");
        assert!(allow["response"].get("status").is_none());
        assert!(allow["response"].get("patch").is_none());
    }
}
