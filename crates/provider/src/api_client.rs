//! What a JSON cloud API client is, whatever the cloud: the HTTP client, the API's base URL, the retry
//! policy and the pacers its calls wait for: its account's, shared through the settings' [`PacerPool`]
//! with every other client of the account, and its own write rate. Each provider's `Api` holds one beside
//! what is its own (its credentials, its paging, its error envelope), so the skeleton is written once.

use std::sync::Arc;

use reqwest::Method;
use serde::Serialize;

use crate::backoff::Backoff;
use crate::budget::{AccountKey, PacerPool};
use crate::http::{HttpClient, HttpError, Observer, Request};
use crate::pace::{Pacer, Rate};
use crate::settings::CallSettings;

/// The settings every cloud API client takes, embedded in each cloud provider's configuration, so the
/// fields are declared, defaulted and read into an [`ApiClient`] once: how each call is made, and the
/// account's limits, which every client of the account shares.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    /// Time limit, retries and this client's write rate (`--provider-write-rate`), within the account's
    /// limits.
    pub calls: CallSettings,
    /// Every request of the account at most this often: the API's documented limit, where it has one, or
    /// `--provider-request-rate`; every client of the account together.
    pub requests: Option<Rate>,
    /// Write requests of the account at most this often, within `requests`: the API's own write limit
    /// (Resource Manager's), every client of the account together.
    pub account_writes: Option<Rate>,
    /// Where the account's pacer comes from: the binary hands every provider one pool, so the clients of
    /// one account share it; a pool of its own by default (no one to share with).
    pub pool: Arc<PacerPool>,
}

impl ApiSettings {
    /// 30 s a request, the default backoff, no write rate, and `requests` the API's own limit.
    pub fn new(requests: Option<Rate>) -> ApiSettings {
        ApiSettings {
            calls: CallSettings::default(),
            requests,
            account_writes: None,
            pool: Arc::new(PacerPool::new()),
        }
    }
}

/// The shared part of a cloud API client. Its `Debug` shows the base URL only: the rest is either
/// configuration printed elsewhere or internal state.
pub struct ApiClient {
    http: HttpClient,
    base: String,
    backoff: Backoff,
    /// The account's limits, shared with every client of the account.
    account: Arc<Pacer>,
    /// This client's own write rate.
    own: Pacer,
}

impl std::fmt::Debug for ApiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiClient")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl ApiClient {
    /// A client built as [`HttpClient::api_builder`] builds one (the configuration's request hook and
    /// time limit), paced by the settings' rates: the account's from the settings' pool under `account`,
    /// the write rate its own. `base` is kept without a trailing `/`, so paths starting with `/` append
    /// to it.
    pub fn new(
        observer: &Observer,
        settings: &ApiSettings,
        base: &str,
        account: &AccountKey,
    ) -> Result<ApiClient, HttpError> {
        Ok(ApiClient {
            http: HttpClient::api_builder(observer, settings.calls.timeout).build()?,
            base: base.trim_end_matches('/').to_string(),
            backoff: settings.calls.backoff.clone(),
            account: settings.pool.pacer(account, settings.requests, settings.account_writes),
            own: Pacer::new(None, settings.calls.write_rate),
        })
    }

    /// The API's base URL, without a trailing `/`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The URL of `path` (which starts with `/`) under the base.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The retry policy every call of the API runs under ([`Backoff::retry`]).
    pub fn backoff(&self) -> &Backoff {
        &self.backoff
    }

    /// The account's pacer, for an answer that asks the client to hold off ([`Pacer::hold_off`]): the cloud
    /// throttled the account, so every client of it holds.
    pub fn pacer(&self) -> &Pacer {
        &self.account
    }

    /// A call of `path` (which starts with `/`) under the base, with no query and no body yet.
    pub fn call(&self, method: Method, path: &str) -> Call<'static> {
        Call::new(method, self.url(path))
    }

    /// The request for `call` (its query and JSON body set), once the pacer lets it go: a GET waits for
    /// the request rate, any other method for the write rate as well, so reads are never held back by
    /// a write budget. Authentication and headers are the provider's to add.
    pub async fn paced<B: Serialize + ?Sized>(&self, call: &Call<'_, B>) -> Request<'_> {
        if call.method == Method::GET {
            self.account.request().await;
        } else {
            self.own.write_within(&self.account).await;
        }
        self.http
            .request(call.method.clone(), &call.url)
            .query(call.query)
            .json_if(call.body)
    }
}

/// One call of a cloud API, built once and sent again by every attempt: method, URL, query and JSON body.
#[derive(Debug)]
pub struct Call<'a, B: ?Sized = ()> {
    /// The method.
    pub method: Method,
    /// The whole URL, as the retry log names it.
    pub url: String,
    /// Query parameters, serialised form-style.
    pub query: &'a [(&'a str, String)],
    /// The JSON body, when there is one.
    pub body: Option<&'a B>,
}

impl Call<'static> {
    /// A call of a whole URL (a next-page link the API handed back), with no query and no body yet.
    pub fn new(method: Method, url: String) -> Call<'static> {
        Call {
            method,
            url,
            query: &[],
            body: None,
        }
    }
}

impl<'a, B: ?Sized> Call<'a, B> {
    /// The call with these query parameters.
    pub fn query<'b>(self, query: &'b [(&'b str, String)]) -> Call<'b, B>
    where
        'a: 'b,
    {
        Call {
            method: self.method,
            url: self.url,
            query,
            body: self.body,
        }
    }

    /// The call with this JSON body.
    pub fn json<'b, C: ?Sized>(self, body: &'b C) -> Call<'b, C>
    where
        'a: 'b,
    {
        Call {
            method: self.method,
            url: self.url,
            query: self.query,
            body: Some(body),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_append_to_the_base_without_a_double_slash() {
        let settings = ApiSettings::new(None);
        let account = AccountKey::named("test", "https://api.example.test", "a");
        let client = ApiClient::new(
            &Observer::default(),
            &settings,
            "https://api.example.test/v4/",
            &account,
        )
        .expect("a client with default TLS builds");
        assert_eq!(client.base(), "https://api.example.test/v4");
        assert_eq!(client.url("/zones"), "https://api.example.test/v4/zones");
        let call = client.call(Method::POST, "/zones/z/batch").json(&[1, 2]);
        assert_eq!(
            (call.url.as_str(), call.body),
            ("https://api.example.test/v4/zones/z/batch", Some(&[1, 2]))
        );
        assert_eq!(
            format!("{client:?}"),
            "ApiClient { base: \"https://api.example.test/v4\", .. }"
        );
    }
}
