//! The four Route53 calls extdns makes, SigV4-signed, paced under Route53's request rate and retried with
//! backoff when Route53 throttles or fails.

use extdns_provider::failure::{self, FailureKind, HttpAnswer};
use extdns_provider::http::{Reply, percent_encode};
use std::sync::Arc;

use extdns_provider::pace::Pacer;
use extdns_provider::{Backoff, CallError, HttpClient};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

use extdns_aws::{Call, CredentialsError, Pacing, SignError, Signer, SignerConfig, SignerError};

use crate::config::{AwsConfig, ConfigError};
use crate::xml;

const API: &str = "2013-04-01";
/// The one write call: what `--provider-write-rate` counts.
const CHANGE: &str = "ChangeResourceRecordSets";
/// Route53 returns at most 300 record sets a page.
const RECORD_PAGE: u32 = 300;
/// ListTagsForResources takes at most 10 zones a call.
pub const TAG_BATCH: usize = 10;

/// Why a call failed, after its retries.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// The request did not get an answer (connection, timeout).
    #[error("{call}: {source}")]
    Transport {
        /// The API call, for the message.
        call: String,
        /// The HTTP client's reason.
        #[source]
        source: reqwest::Error,
    },
    /// Route53 answered with an error document.
    #[error("{call}: HTTP {status} {code}: {message}")]
    Status {
        /// The API call.
        call: String,
        /// The HTTP status.
        status: u16,
        /// Route53's error code (`Throttling`, `InvalidChangeBatch`, ...).
        code: String,
        /// Route53's explanation.
        message: String,
        /// The failure's kind, from the status and the code ([`kind_of`]); it decides retries.
        kind: FailureKind,
    },
    /// The answer is not the document we asked for.
    #[error("{call}: unreadable answer: {source}")]
    Decode {
        /// The API call.
        call: String,
        /// The XML decoder's reason.
        #[source]
        source: quick_xml::DeError,
    },
    /// The request's body could not be written.
    #[error("{call}: cannot write the request: {source}")]
    Encode {
        /// The API call.
        call: String,
        /// The XML encoder's reason.
        #[source]
        source: quick_xml::SeError,
    },
    /// The request could not be signed.
    #[error("{call}: cannot sign the request: {source}")]
    Sign {
        /// The API call.
        call: String,
        /// The signer's reason.
        #[source]
        source: SignError,
    },
    /// No credentials to sign with.
    #[error("{call}: {source}")]
    Credentials {
        /// The API call.
        call: String,
        /// Why the chain found none.
        #[source]
        source: CredentialsError,
    },
}

/// The kind of a Route53 error document: its code says more than the status (Route53 throttles with a
/// 400 `Throttling` or `PriorRequestNotComplete`); a change batch it refuses (`InvalidChangeBatch`,
/// `InvalidInput`) may be one record's fault, so it is split; any other 400 is final.
pub fn kind_of(answer: &HttpAnswer, code: &str) -> FailureKind {
    failure::classify(answer, |a| match code {
        "Throttling" | "ThrottlingException" | "PriorRequestNotComplete" | "RequestThrottled" => Some(a.throttled()),
        "InvalidClientTokenId" | "SignatureDoesNotMatch" | "AccessDenied" | "ExpiredToken" => Some(FailureKind::Auth),
        "InvalidChangeBatch" | "InvalidInput" => Some(FailureKind::Refused),
        _ => (a.status == StatusCode::BAD_REQUEST).then_some(FailureKind::Fatal),
    })
}

impl CallError for ApiError {
    fn kind(&self) -> FailureKind {
        match self {
            ApiError::Transport { source, .. } => failure::unanswered(source),
            ApiError::Status { kind, .. } => *kind,
            // A metadata service or STS that did not answer may next time: not the configuration's fault.
            ApiError::Credentials { source, .. } if source.is_transient() => FailureKind::Transient,
            ApiError::Sign { .. } | ApiError::Credentials { .. } => FailureKind::Auth,
            ApiError::Decode { .. } | ApiError::Encode { .. } => FailureKind::Fatal,
        }
    }
}

/// One page of record sets and where the next starts.
pub struct RecordPage {
    pub sets: Vec<xml::ResourceRecordSet>,
    pub next: Option<(String, String, Option<String>)>,
}

/// A Route53 client bound to one endpoint and one set of credentials.
pub struct Client {
    http: HttpClient,
    base: String,
    /// Signs for `route53` in the configured region with the credential chain's credentials.
    signer: Signer,
    /// Its attempts are the configured retries plus the first call (`AwsConfig::attempts_for`).
    backoff: Backoff,
    /// Route53 allows 5 requests a second per account (every call counts): the account's pacer, shared by
    /// every pipeline of the account through the configuration's pool.
    account: Arc<Pacer>,
    /// `--provider-write-rate` on this client's change requests.
    own: Pacer,
}

impl Client {
    pub fn new(config: &AwsConfig) -> Result<Client, ConfigError> {
        let http = HttpClient::builder()
            .observed_by(&config.observer)
            .timeout(config.api.calls.timeout)
            .build()
            .map_err(ConfigError::Client)?;
        let mut signing = SignerConfig::new(config.credentials.clone(), config.signing_region.clone(), "route53");
        signing.assume_role = config.assume_role.clone();
        signing.refresh_before = config.credentials_refresh_before;
        signing.timeout = config.api.calls.timeout;
        let signer = Signer::new(signing, &config.observer).map_err(ConfigError::Client)?;
        Ok(Client {
            http,
            base: config.endpoint.as_str().trim_end_matches('/').to_string(),
            signer,
            backoff: config.api.calls.backoff.clone(),
            account: (config.api.pool).pacer(&config.account(), config.api.requests, config.api.account_writes),
            own: Pacer::new(None, config.api.calls.write_rate),
        })
    }

    /// Every hosted zone of the account, all pages.
    pub async fn list_hosted_zones(&self) -> Result<Vec<xml::HostedZone>, ApiError> {
        let mut zones = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let mut query = vec![("maxitems", "100".to_string())];
            if let Some(m) = &marker {
                query.push(("marker", m.clone()));
            }
            let page: xml::ListHostedZonesResponse = self
                .get("ListHostedZones", &format!("/{API}/hostedzone"), &query)
                .await?;
            zones.extend(page.hosted_zones.items);
            match page.next_marker.filter(|m| page.is_truncated && !m.is_empty()) {
                Some(m) => marker = Some(m),
                None => return Ok(zones),
            }
        }
    }

    /// The tags of up to [`TAG_BATCH`] zones, by zone id.
    pub async fn list_tags(&self, zone_ids: &[&str]) -> Result<Vec<xml::ResourceTagSet>, ApiError> {
        let body = quick_xml::se::to_string(&xml::ListTagsForResourcesRequest {
            xmlns: xml::NAMESPACE,
            resource_ids: xml::ResourceIds {
                items: zone_ids.to_vec(),
            },
        })
        .map_err(|source| ApiError::Encode {
            call: "ListTagsForResources".into(),
            source,
        })?;
        let answer: xml::ListTagsForResourcesResponse = self
            .post("ListTagsForResources", &format!("/{API}/tags/hostedzone"), body)
            .await?;
        Ok(answer.resource_tag_sets.items)
    }

    /// One page of a zone's record sets, starting at `start` (name, type, set identifier).
    pub async fn list_record_sets(
        &self,
        zone_id: &str,
        start: Option<&(String, String, Option<String>)>,
    ) -> Result<RecordPage, ApiError> {
        let mut query = vec![("maxitems", RECORD_PAGE.to_string())];
        if let Some((name, kind, identifier)) = start {
            query.push(("name", name.clone()));
            query.push(("type", kind.clone()));
            if let Some(id) = identifier {
                query.push(("identifier", id.clone()));
            }
        }
        let page: xml::ListResourceRecordSetsResponse = self
            .get(
                "ListResourceRecordSets",
                &format!("/{API}/hostedzone/{zone_id}/rrset"),
                &query,
            )
            .await?;
        let next = match (page.is_truncated, page.next_record_name, page.next_record_type) {
            (true, Some(name), Some(kind)) => Some((name, kind, page.next_record_identifier)),
            _ => None,
        };
        Ok(RecordPage {
            sets: page.resource_record_sets.items,
            next,
        })
    }

    /// Apply one change batch atomically.
    pub async fn change(&self, zone_id: &str, changes: &[xml::Change]) -> Result<(), ApiError> {
        let body = quick_xml::se::to_string(&xml::ChangeResourceRecordSetsRequest {
            xmlns: xml::NAMESPACE,
            change_batch: xml::ChangeBatch {
                comment: None,
                changes: xml::Changes { items: changes },
            },
        })
        .map_err(|source| ApiError::Encode {
            call: CHANGE.into(),
            source,
        })?;
        let _: serde::de::IgnoredAny = self
            .post(CHANGE, &format!("/{API}/hostedzone/{zone_id}/rrset/"), body)
            .await?;
        Ok(())
    }

    /// A GET of `path` with `query`, as [`Client::call`] makes it.
    async fn get<T: DeserializeOwned>(&self, name: &str, path: &str, query: &[(&str, String)]) -> Result<T, ApiError> {
        self.call(name, Method::GET, self.url(path, query), None).await
    }

    /// A POST of the XML document `body` to `path`, as [`Client::call`] makes it.
    async fn post<T: DeserializeOwned>(&self, name: &str, path: &str, body: String) -> Result<T, ApiError> {
        self.call(name, Method::POST, self.url(path, &[]), Some(body)).await
    }

    /// The URL of `path` with `query`, its values percent-encoded as SigV4 signs them.
    fn url(&self, path: &str, query: &[(&str, String)]) -> String {
        let mut url = format!("{}{path}", self.base);
        if !query.is_empty() {
            let q: Vec<String> = query
                .iter()
                .map(|(k, v)| format!("{k}={}", percent_encode(v)))
                .collect();
            url.push('?');
            url.push_str(&q.join("&"));
        }
        url
    }

    /// One call, retried with backoff while Route53 throttles or fails transiently. A change batch is not
    /// sent again after a transient failure: its answer may have been lost after it landed, and an update is
    /// a DELETE of what was read plus a CREATE, which Route53 refuses the second time as if the set had
    /// changed. The failure fails the sync, and the next one reads the zone and plans again.
    async fn call<T: DeserializeOwned>(
        &self,
        name: &str,
        method: Method,
        url: String,
        body: Option<String>,
    ) -> Result<T, ApiError> {
        let attempt = || self.once(name, &method, &url, body.as_deref());
        let classify = |e: &ApiError| match e.kind() {
            FailureKind::Transient if name == CHANGE => FailureKind::Fatal,
            kind => kind,
        };
        self.backoff.retry(name, attempt, classify).await
    }

    async fn once<T: DeserializeOwned>(
        &self,
        name: &str,
        method: &Method,
        url: &str,
        body: Option<&str>,
    ) -> Result<T, ApiError> {
        let headers: &[(&str, &str)] = if body.is_some() {
            &[("content-type", "application/xml")]
        } else {
            &[]
        };
        let call = Call {
            method,
            url,
            headers,
            body,
            write: name == CHANGE,
        };
        let reply = self
            .signer
            .send(
                &self.http,
                Pacing {
                    account: &self.account,
                    own: Some(&self.own),
                },
                call,
                |r| error_of(r).0,
            )
            .await
            .map_err(|e| match e {
                SignerError::Credentials(source) => ApiError::Credentials {
                    call: name.to_string(),
                    source,
                },
                SignerError::Sign(source) => ApiError::Sign {
                    call: name.to_string(),
                    source,
                },
                SignerError::Unanswered(source) => ApiError::Transport {
                    call: name.to_string(),
                    source,
                },
            })?;
        let text = String::from_utf8_lossy(&reply.body);
        if reply.answer.status != StatusCode::OK {
            let (code, message) = error_of(&reply);
            let kind = kind_of(&reply.answer, &code);
            // Route53 throttled the account: every pipeline of it holds.
            self.account.hold_off(kind).await;
            return Err(ApiError::Status {
                call: name.to_string(),
                status: reply.status(),
                code,
                message,
                kind,
            });
        }
        quick_xml::de::from_str(&text).map_err(|source| ApiError::Decode {
            call: name.to_string(),
            source,
        })
    }
}

/// Route53's error code and message in a failed answer: its XML `Error`, or the status's reason and the
/// body's first characters when the body is not one.
fn error_of(reply: &Reply) -> (String, String) {
    let text = String::from_utf8_lossy(&reply.body);
    xml::parse_error(&text).unwrap_or_else(|| {
        (
            reply.answer.status.canonical_reason().unwrap_or("error").to_string(),
            text.chars().take(200).collect(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_credential_source_that_did_not_answer_is_transient_a_missing_one_auth() {
        use extdns_aws::CredentialSourceError;
        use extdns_provider::credentials::{NoCredentials, Tried};
        let unanswered = CredentialSourceError::Request {
            endpoint: extdns_test_support::UNANSWERED_URL.into(),
            source: extdns_test_support::unanswered_request().await,
        };
        let error = |tried| ApiError::Credentials {
            call: "ListHostedZones".into(),
            source: NoCredentials::new("no AWS credentials", tried),
        };
        let failed = error(vec![Tried::failed("instance metadata", unanswered)]);
        assert_eq!(failed.kind(), FailureKind::Transient);
        let missing = CredentialSourceError::NotConfigured("no variables");
        assert_eq!(
            error(vec![Tried::not_configured("environment", missing)]).kind(),
            FailureKind::Auth
        );
    }

    fn kind(status: u16, code: &str) -> FailureKind {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT);
        kind_of(&HttpAnswer::with_status(status), code)
    }

    #[test]
    fn route53_codes_refine_the_status() {
        let throttled = FailureKind::Throttled { retry_after: None };
        assert_eq!(kind(400, "Throttling"), throttled);
        assert_eq!(kind(400, "PriorRequestNotComplete"), throttled);
        let asked = HttpAnswer {
            status: StatusCode::BAD_REQUEST,
            retry_after: Some(std::time::Duration::from_secs(2)),
        };
        assert_eq!(
            kind_of(&asked, "Throttling"),
            FailureKind::Throttled {
                retry_after: Some(std::time::Duration::from_secs(2))
            }
        );
        assert_eq!(kind(429, "TooManyRequests"), throttled);
        assert_eq!(kind(503, "ServiceUnavailable"), FailureKind::Transient);
        assert_eq!(kind(400, "InvalidChangeBatch"), FailureKind::Refused);
        assert_eq!(kind(400, "InvalidInput"), FailureKind::Refused);
        assert_eq!(kind(400, "NoSuchHealthCheck"), FailureKind::Fatal);
        assert_eq!(kind(404, "NoSuchHostedZone"), FailureKind::Fatal);
        assert_eq!(kind(403, "SignatureDoesNotMatch"), FailureKind::Auth);
        assert_eq!(kind(400, "ExpiredToken"), FailureKind::Auth);
    }
}
