//! A Kubernetes API server answered in process by a function of each request: no server process, no
//! port. The `kube::Client` of the tests that script what the API server says to the code under test
//! (the CRD registry's claims and hand-over, the provider manager's finalizers and status writes), so
//! that each test writes only its answers, not the tower service, body reading and JSON framing around
//! them.

use std::sync::Arc;

use http_body_util::BodyExt;
use serde_json::{Value, json};

/// One request as the fake API server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiRequest {
    /// `GET`, `POST`, `PUT`, `PATCH`, `DELETE`.
    pub method: String,
    /// The URI's path (`/apis/externaldns.k8s.io/v1alpha1/namespaces/dns/dnsrecords`).
    pub path: String,
    /// The URI's query, empty when there is none (`labelSelector=…`).
    pub query: String,
    /// The request's body as sent.
    pub body: Vec<u8>,
}

impl ApiRequest {
    /// The body as text (invalid UTF-8 replaced), for asserting on what a write sent.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON: the object a create or replace sent.
    pub fn json(&self) -> serde_json::Result<Value> {
        serde_json::from_slice(&self.body)
    }
}

/// A client in `namespace` whose every request `answer` answers with an HTTP status and a JSON body.
pub fn client(namespace: &str, answer: impl Fn(ApiRequest) -> (u16, Value) + Send + Sync + 'static) -> kube::Client {
    let answer = Arc::new(answer);
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let answer = Arc::clone(&answer);
        async move {
            let method = request.method().to_string();
            let path = request.uri().path().to_string();
            let query = request.uri().query().unwrap_or_default().to_string();
            let body = request.into_body().collect().await?.to_bytes().to_vec();
            let (code, value) = answer(ApiRequest {
                method,
                path,
                query,
                body,
            });
            let response = http::Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(kube::client::Body::from(serde_json::to_vec(&value)?))?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(response)
        }
    });
    kube::Client::new(service, namespace)
}

/// The `Status` object the API server answers a refusal with (`reason` as `Forbidden`, `AlreadyExists`,
/// `NotFound`), with `code` as its HTTP status: return it as `(code, status(code, reason))`.
pub fn status(code: u16, reason: &str) -> Value {
    json!({ "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
            "message": reason, "code": code })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client reaches the answer with the request's parts, and the answer's status and body come back
    /// to the caller: a refusal as kube's API error, an object as itself.
    #[tokio::test]
    async fn requests_reach_the_answer_and_its_reply_reaches_the_caller() -> anyhow::Result<()> {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let client = super::client("dns", move |r| {
            let refused = r.method == "POST";
            log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(r);
            if refused {
                (409, status(409, "AlreadyExists"))
            } else {
                (
                    200,
                    json!({ "kind": "ConfigMap", "apiVersion": "v1", "metadata": { "name": "x" } }),
                )
            }
        });
        let get = http::Request::get("/api/v1/namespaces/dns/configmaps/x").body(Vec::new())?;
        let got: Value = client.request(get).await?;
        assert_eq!(got["metadata"]["name"], "x");
        let post =
            http::Request::post("/api/v1/namespaces/dns/configmaps").body(br#"{"kind":"ConfigMap"}"#.to_vec())?;
        match client.request::<Value>(post).await {
            Err(kube::Error::Api(e)) => assert_eq!(e.code, 409),
            other => anyhow::bail!("a refusal expected, got {other:?}"),
        }
        let seen = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        assert_eq!(seen[0].method, "GET");
        assert_eq!(seen[0].path, "/api/v1/namespaces/dns/configmaps/x");
        assert_eq!(seen[1].method, "POST");
        assert_eq!(seen[1].json()?["kind"], "ConfigMap");
        Ok(())
    }
}
