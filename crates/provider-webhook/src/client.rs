//! `--provider=webhook`: the records live behind a webhook server; this is the [`Provider`] that asks it.

use std::time::Duration;

use async_trait::async_trait;
use extdns_endpoint::{Change, DomainFilter, Endpoint};
use extdns_provider::failure;
use extdns_provider::pace::Pacer;
use extdns_provider::{Backoff, FailureKind, HttpClient, Provider, ProviderError, ReadState, Records, Unit};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use reqwest::{Response, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::debug;

use crate::{MEDIA_TYPE, WebhookError};

/// How to reach a webhook server, with external-dns's defaults.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WebhookConfig {
    /// The server's base URL; negotiation asks it, the other calls add `/records` and `/adjustendpoints`.
    pub url: Url,
    /// The client's whole-request timeout is read + write, as external-dns's is.
    pub read_timeout: Duration,
    /// Bounds each write (`POST /records`, `POST /adjustendpoints`).
    pub write_timeout: Duration,
    /// The largest response body accepted; `None` accepts any size.
    pub max_body_size: Option<u64>,
    /// Negotiation is the one call retried in place: a sidecar often starts after the controller.
    pub negotiate_backoff: Backoff,
    /// Told about every HTTP request (the binary's request-duration metric).
    pub observer: extdns_provider::http::Observer,
    /// Told about every protocol call and whether it failed (external-dns's `webhook_provider_*` counters).
    pub calls: CallCounter,
    /// `--provider-write-rate`: `POST /records` at most this often (none by default).
    pub write_rate: Option<extdns_provider::pace::Rate>,
}

/// The protocol calls external-dns counts, each with its requests and its errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Call {
    /// `GET /records`.
    Records,
    /// `POST /records`.
    ApplyChanges,
    /// `POST /adjustendpoints`.
    AdjustEndpoints,
}

/// Counts protocol calls; the binary's implementation feeds the metrics.
pub trait CountCalls: Send + Sync {
    /// One call of `call` was made; `failed` when it did not return what the protocol requires.
    fn count(&self, call: Call, failed: bool);
}

/// An optional [`CountCalls`], so [`WebhookConfig`] keeps deriving `Debug` and `Clone`.
#[derive(Clone, Default)]
pub struct CallCounter(pub Option<std::sync::Arc<dyn CountCalls>>);

impl std::fmt::Debug for CallCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = if self.0.is_some() { "set" } else { "none" };
        write!(f, "CallCounter({held})")
    }
}

impl CallCounter {
    fn count<T, E>(&self, call: Call, result: &Result<T, E>) {
        if let Some(c) = &self.0 {
            c.count(call, result.is_err());
        }
    }
}

impl WebhookConfig {
    /// external-dns's defaults: 5 s read, 10 s write, 32 MiB bodies, negotiation tried 5 times.
    pub fn new(url: Url) -> Self {
        WebhookConfig {
            observer: Default::default(),
            calls: CallCounter::default(),
            url,
            read_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            max_body_size: Some(32 * 1024 * 1024),
            negotiate_backoff: Backoff::default(),
            write_rate: None,
        }
    }

    /// Parse a base URL the way the protocol needs it: http or https, with a host.
    pub fn parse_url(url: &str) -> Result<Url, WebhookError> {
        let invalid = || WebhookError::InvalidUrl { url: url.to_string() };
        let parsed = Url::parse(url).map_err(|_| invalid())?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() || parsed.cannot_be_a_base() {
            return Err(invalid());
        }
        Ok(parsed)
    }
}

/// A provider behind a webhook server. Built by [`WebhookProvider::connect`], which negotiates first: the
/// server's domain filter is known before the first sync, as the plan needs it.
#[derive(Debug)]
pub struct WebhookProvider {
    client: HttpClient,
    base: Url,
    records_url: Url,
    adjust_url: Url,
    max_body_size: Option<u64>,
    domain_filter: DomainFilter,
    calls: CallCounter,
    pacer: Pacer,
}

impl WebhookProvider {
    /// Negotiate with the server (`GET` the base URL), retrying with backoff while it is not up yet.
    pub async fn connect(config: &WebhookConfig) -> Result<Self, WebhookError> {
        let mut client = HttpClient::builder().observed_by(&config.observer);
        // Go's client has no timeout when the sum is zero; reqwest's would fail every request at once.
        let timeout = config.read_timeout + config.write_timeout;
        if !timeout.is_zero() {
            client = client.timeout(timeout);
        }
        let client = client.build().map_err(|source| WebhookError::Client {
            url: config.url.to_string(),
            source,
        })?;
        let mut provider = WebhookProvider {
            client,
            base: config.url.clone(),
            records_url: join(&config.url, "records")?,
            adjust_url: join(&config.url, "adjustendpoints")?,
            max_body_size: config.max_body_size,
            domain_filter: DomainFilter::default(),
            calls: config.calls.clone(),
            pacer: Pacer::new(None, config.write_rate),
        };
        provider.domain_filter = config
            .negotiate_backoff
            .retry(
                "webhook negotiation",
                || provider.negotiate(),
                |_| FailureKind::Transient,
            )
            .await?;
        debug!(url = %provider.base, "webhook negotiated");
        Ok(provider)
    }

    async fn negotiate(&self) -> Result<DomainFilter, WebhookError> {
        const METHOD: &str = "GET";
        let response = self
            .client
            .get(self.base.clone())
            .header(ACCEPT, HeaderValue::from_static(MEDIA_TYPE))
            .send()
            .await
            .map_err(|source| request_error(METHOD, &self.base, source))?;
        self.expect_status(METHOD, &self.base, &response, StatusCode::OK)
            .await?;
        let content_type = response.headers().get(CONTENT_TYPE).map(HeaderValue::as_bytes);
        if content_type != Some(MEDIA_TYPE.as_bytes()) {
            return Err(WebhookError::MediaType {
                url: self.base.to_string(),
                content_type: content_type
                    .map(|c| String::from_utf8_lossy(c).into_owned())
                    .unwrap_or_default(),
            });
        }
        self.decode(METHOD, &self.base, response).await
    }

    /// Read a response body up to the size limit, refusing it as soon as it is known to be larger (from
    /// `Content-Length`, else while the chunks arrive), then decode it.
    async fn decode<T: DeserializeOwned>(
        &self,
        method: &'static str,
        url: &Url,
        mut response: Response,
    ) -> Result<T, WebhookError> {
        let too_large = || WebhookError::BodyTooLarge {
            method,
            url: url.to_string(),
            limit: self.max_body_size.unwrap_or(u64::MAX),
        };
        let limit = self.max_body_size.unwrap_or(u64::MAX);
        if response.content_length().is_some_and(|len| len > limit) {
            return Err(too_large());
        }
        let capacity = response.content_length().unwrap_or(0).min(limit).min(1 << 20);
        let mut body = Vec::with_capacity(usize::try_from(capacity).unwrap_or(0));
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|source| request_error(method, url, source))?
        {
            if (body.len() + chunk.len()) as u64 > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|source| WebhookError::Decode {
            method,
            url: url.to_string(),
            source,
        })
    }

    /// `Ok` when `response` has the status the protocol allows, else the error. A 429 (or a 503) that asks
    /// to wait with `Retry-After` holds every request of this provider as long as it asked, as the other
    /// HTTP clients do: the call's kind stays the protocol's (a 429 is not retried), but nothing is sent
    /// to a server that asked for quiet before it wanted.
    async fn expect_status(
        &self,
        method: &'static str,
        url: &Url,
        response: &Response,
        expected: StatusCode,
    ) -> Result<(), WebhookError> {
        if response.status() == expected {
            return Ok(());
        }
        let asked = failure::retry_after(response.headers());
        self.pacer
            .hold_off(FailureKind::of_status(response.status(), asked))
            .await;
        Err(WebhookError::Status {
            method,
            url: url.to_string(),
            status: response.status().as_u16(),
            expected: expected.as_u16(),
        })
    }

    async fn post<B: Serialize>(&self, url: &Url, body: &B, accept: bool) -> Result<Response, WebhookError> {
        const METHOD: &str = "POST";
        let body = serde_json::to_vec(body).map_err(|source| WebhookError::Encode {
            method: METHOD,
            url: url.to_string(),
            source,
        })?;
        let mut request = self
            .client
            .post(url.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
        if accept {
            request = request.header(ACCEPT, HeaderValue::from_static(MEDIA_TYPE));
        }
        request
            .body(body)
            .send()
            .await
            .map_err(|source| request_error(METHOD, url, source))
    }

    async fn read_records(&self) -> Result<Vec<Endpoint>, WebhookError> {
        const METHOD: &str = "GET";
        let url = &self.records_url;
        self.pacer.request().await;
        let response = self
            .client
            .get(url.clone())
            .header(ACCEPT, HeaderValue::from_static(MEDIA_TYPE))
            .send()
            .await
            .map_err(|source| request_error(METHOD, url, source))?;
        self.expect_status(METHOD, url, &response, StatusCode::OK).await?;
        // A Go server with no records encodes its nil slice as `null`.
        let mut endpoints = self
            .decode::<Option<Vec<Endpoint>>>(METHOD, url, response)
            .await?
            .unwrap_or_default();
        // TLSA, SVCB and HTTPS pass through as text; a server's own spelling of them (upper-case hex, its
        // param order) is put in the canonical text sources write, so it does not look like a change.
        endpoints.iter_mut().for_each(extdns_endpoint::canonicalize_targets);
        Ok(endpoints)
    }

    async fn write(&self, units: &[Unit<'_>]) -> Result<(), WebhookError> {
        let changes = ChangesRef::from_units(units);
        let url = &self.records_url;
        self.pacer.write().await;
        let response = self.post(url, &changes, false).await?;
        self.expect_status("POST", url, &response, StatusCode::NO_CONTENT).await
    }

    async fn adjust(&self, endpoints: &[Endpoint]) -> Result<Vec<Endpoint>, WebhookError> {
        let url = &self.adjust_url;
        self.pacer.request().await;
        let response = self.post(url, &endpoints, true).await?;
        self.expect_status("POST", url, &response, StatusCode::OK).await?;
        Ok(self
            .decode::<Option<Vec<Endpoint>>>("POST", url, response)
            .await?
            .unwrap_or_default())
    }
}

#[async_trait]
impl Provider for WebhookProvider {
    async fn records(&self) -> Result<Records, ProviderError> {
        let read = self.read_records().await;
        self.calls.count(Call::Records, &read);
        Ok(Records::from(read?))
    }

    /// The whole change set in one request, as external-dns sends it. A failed request is not split and
    /// sent again in halves: nothing says a server applies a request all or nothing, and halves of a
    /// half-applied request would apply changes twice.
    async fn apply(&self, _read: &ReadState, units: &[Unit<'_>]) -> Result<(), ProviderError> {
        if units.is_empty() {
            return Ok(());
        }
        let written = self.write(units).await;
        self.calls.count(Call::ApplyChanges, &written);
        Ok(written?)
    }

    async fn adjust_endpoints(&self, endpoints: Vec<Endpoint>) -> Result<Vec<Endpoint>, ProviderError> {
        let adjusted = self.adjust(&endpoints).await;
        self.calls.count(Call::AdjustEndpoints, &adjusted);
        Ok(adjusted?)
    }

    fn domain_filter(&self) -> DomainFilter {
        self.domain_filter.clone()
    }

    /// The protocol has no read state.
    fn read_state_outlives_writes(&self) -> bool {
        true
    }
}

/// external-dns's change-set JSON over borrowed records, so a large plan is encoded without copying it.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct ChangesRef<'a> {
    create: Vec<&'a Endpoint>,
    update_old: Vec<&'a Endpoint>,
    update_new: Vec<&'a Endpoint>,
    delete: Vec<&'a Endpoint>,
}

impl<'a> ChangesRef<'a> {
    fn from_units(units: &[Unit<'a>]) -> Self {
        let mut c = ChangesRef::default();
        for change in units.iter().flat_map(Unit::changes) {
            match change {
                Change::Create(e) => c.create.push(e),
                Change::Update { old, new } => {
                    c.update_old.push(old);
                    c.update_new.push(new);
                }
                Change::Delete(e) => c.delete.push(e),
            }
        }
        c
    }
}

fn join(base: &Url, path: &str) -> Result<Url, WebhookError> {
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|()| WebhookError::InvalidUrl { url: base.to_string() })?
        .pop_if_empty()
        .push(path);
    Ok(url)
}

fn request_error(method: &'static str, url: &Url, source: reqwest::Error) -> WebhookError {
    WebhookError::Request {
        method,
        url: url.to_string(),
        source,
    }
}
