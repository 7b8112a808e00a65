//! A stateful fake of the part of Azure that extdns's and external-dns's Azure providers use, written from
//! Microsoft's published REST references (Azure DNS record sets and zones at api-version 2018-05-01, Azure
//! Private DNS at 2024-06-01; the Microsoft identity platform's client-credentials grant with a secret or a
//! federated client assertion; the managed identity endpoint, IMDS), on one port:
//!
//! - `/subscriptions/{SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP}/providers/Microsoft.Network/...`: zones
//!   and every record set of a zone, paged by `nextLink` ([`FakeAzureState::page_limit`] a page); a record set's
//!   GET, PUT (201 created, 200 replaced) and DELETE (200 deleted, 204 absent), with ETags: `If-Match` that
//!   does not match and `If-None-Match: *` on an existing set answer 412; each API's JSON casing and nothing
//!   else (public `TTL`/`ARecords`, private `ttl`/`aRecords`; NS only in public zones; a TXT string longer
//!   than 255 characters refused; a `*` anywhere but as a record set name's whole first label refused,
//!   as Azure documents wildcards); an api-version other than the service's refused; a token the fake did not
//!   issue refused with 401.
//! - `/{TENANT}/oauth2/v2.0/token`: the client-credentials grant with [`CLIENT_SECRET`] or the
//!   [`FEDERATED_TOKEN`] as a client assertion, for scope `<audience>/.default`.
//! - `/metadata/identity/oauth2/token`: IMDS, only with `Metadata: true`, system-assigned or
//!   [`USER_ASSIGNED_CLIENT_ID`].
//!
//! On the [`crate::fake`] skeleton, whose faults reach Resource Manager only: throttled as Resource Manager
//! throttles (429 `Throttled` with `Retry-After` and `retry-after-ms`) past its documented limits per
//! subscription ([`READ_LIMIT`], [`WRITE_LIMIT`], [`DELETE_LIMIT`]), the PUT of a refused record set name
//! answered 400 `BadRequest` naming it, while the others land.

// A handler's refusal is its answer: helpers return it as the `Err` they are checked with.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::MutexGuard;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::fake::{self, Api, FakeServer, Locked, Op, Purpose, RateLimit};

/// Resource Manager's documented limit on a subscription's reads: a token bucket of 250 refilled 25 a
/// second, per subscription and region (the regional token-bucket limits Microsoft moved subscriptions to
/// in 2024), <https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/request-limits-and-throttling>.
pub const READ_LIMIT: RateLimit = RateLimit::bucket(250, 25.0).of(Op::Read);
/// The same page's limit on a subscription's writes: a bucket of 200 refilled 10 a second.
pub const WRITE_LIMIT: RateLimit = RateLimit::bucket(200, 10.0).of(Op::Write);
/// The same page's limit on a subscription's deletes: a bucket of 200 refilled 10 a second.
pub const DELETE_LIMIT: RateLimit = RateLimit::bucket(200, 10.0).of(Op::Delete);

/// The subscription the fake serves.
pub const SUBSCRIPTION: &str = "00000000-0000-0000-0000-0000000000aa";
/// The resource group the fake serves.
pub const RESOURCE_GROUP: &str = "extdns-test";
/// The tenant tokens are issued for.
pub const TENANT: &str = "00000000-0000-0000-0000-0000000000bb";
/// The application (client) id of the test service principal.
pub const CLIENT_ID: &str = "00000000-0000-0000-0000-0000000000cc";
/// Its secret.
pub const CLIENT_SECRET: &str = "test-client-secret";
/// The Kubernetes token the federated credential trusts (what `AZURE_FEDERATED_TOKEN_FILE` holds).
pub const FEDERATED_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.test-federated.sig";
/// The client id of the test user-assigned managed identity.
pub const USER_ASSIGNED_CLIENT_ID: &str = "00000000-0000-0000-0000-0000000000dd";
/// The host names external-dns's Azure SDK calls in the public cloud, for
/// [`crate::tls_proxy::TlsProxy::start`].
pub const AZURE_HOSTS: [&str; 2] = ["login.microsoftonline.com", "management.azure.com"];
/// The two Azure providers external-dns has, each with a zone of its API and the names the differential
/// publishes there (as [`crate::differential::Objects::publish_web_and_api`] takes them).
pub const PROVIDERS: [(Service, &str, &str, [&str; 2]); 2] = [
    (
        Service::Public,
        "azure",
        "example.org",
        ["web.example.org", "api.example.org"],
    ),
    (
        Service::Private,
        "azure-private-dns",
        "internal.example",
        ["web.internal.example", "api.internal.example"],
    ),
];
/// The public DNS api-version.
pub const PUBLIC_API_VERSION: &str = "2018-05-01";
/// The private DNS api-version.
pub const PRIVATE_API_VERSION: &str = "2024-06-01";

/// Which API a zone belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Service {
    /// `Microsoft.Network/dnsZones`.
    Public,
    /// `Microsoft.Network/privateDnsZones`.
    Private,
}

impl Service {
    fn segment(self) -> &'static str {
        match self {
            Service::Public => "dnsZones",
            Service::Private => "privateDnsZones",
        }
    }

    fn type_name(self) -> &'static str {
        match self {
            Service::Public => "Microsoft.Network/dnszones",
            Service::Private => "Microsoft.Network/privateDnsZones",
        }
    }

    fn api_version(self) -> &'static str {
        match self {
            Service::Public => PUBLIC_API_VERSION,
            Service::Private => PRIVATE_API_VERSION,
        }
    }

    /// The record types this API holds and their property keys, in its casing: the `RecordType` path
    /// parameter's enum of each api-version's REST reference. Public DNS at 2018-05-01 (what external-dns
    /// v0.23.0's armdns speaks) has A, AAAA, CAA, CNAME, MX, NS, PTR, SOA, SRV and TXT: TLSA (with DS and
    /// NAPTR) arrives only in 2023-07-01-preview; Private DNS at 2024-06-01 has A, AAAA, CNAME, MX, PTR, SOA,
    /// SRV and TXT. Neither has HTTPS or SVCB in any version. A path naming another type is refused
    /// ([`unsupported_type`]).
    fn keys(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Service::Public => &[
                ("A", "ARecords"),
                ("AAAA", "AAAARecords"),
                ("CNAME", "CNAMERecord"),
                ("MX", "MXRecords"),
                ("NS", "NSRecords"),
                ("TXT", "TXTRecords"),
                ("SRV", "SRVRecords"),
                ("PTR", "PTRRecords"),
                ("CAA", "caaRecords"),
                ("SOA", "SOARecord"),
            ],
            Service::Private => &[
                ("A", "aRecords"),
                ("AAAA", "aaaaRecords"),
                ("CNAME", "cnameRecord"),
                ("MX", "mxRecords"),
                ("TXT", "txtRecords"),
                ("SRV", "srvRecords"),
                ("PTR", "ptrRecords"),
                ("SOA", "soaRecord"),
            ],
        }
    }

    fn ttl_key(self) -> &'static str {
        match self {
            Service::Public => "TTL",
            Service::Private => "ttl",
        }
    }
}

/// A stored record set.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSet {
    /// Its relative name as first written (`@` for the apex).
    pub name: String,
    /// Its ETag.
    pub etag: String,
    /// Its properties, as written.
    pub properties: Value,
}

/// Record sets by service, zone, lower-case relative name and type.
pub type SetKey = (Service, String, String, String);

/// What the fake holds and counts; tests read and adjust it through [`FakeAzure::state`].
#[derive(Debug)]
pub struct FakeAzureState {
    /// Zones by service and name.
    pub zones: BTreeSet<(Service, String)>,
    /// Record sets.
    pub sets: BTreeMap<SetKey, StoredSet>,
    /// Tokens issued.
    /// Tokens issued, and when each expires.
    pub tokens: BTreeMap<String, std::time::Instant>,
    /// The lifetime of the tokens it issues, in seconds (`expires_in`).
    pub token_lifetime: u64,
    /// Items per page of a list.
    pub page_limit: usize,
    /// The base of the `nextLink`s it gives out, when clients reach it at another address than its own (a
    /// TLS proxy at `https://management.azure.com`); its own URL when `None`.
    pub next_link_base: Option<String>,
    /// Someone else writes these record sets (relative name, lower-case, → type and properties) just before
    /// extdns's next PUT or DELETE of that name arrives: a change between extdns's read and its write.
    pub interfere: BTreeMap<String, (String, Value)>,
    /// Every token granted: `client_secret`, `client_assertion`, `imds` or `imds <client id>`.
    pub grants: Vec<String>,
    next_etag: u64,
    next_token: u64,
}

impl Api for FakeAzureState {
    fn routes(url: &str) -> Router<Shared> {
        let base = url.to_string();
        Router::new().fallback(
            move |State(state): State<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let base = base.clone();
                async move { handle(&state, &base, &method, &uri, &headers, &body) }
            },
        )
    }

    fn purpose(method: &Method, uri: &Uri, _: &HeaderMap) -> Purpose {
        let path = uri.path();
        if !path.to_ascii_lowercase().starts_with("/subscriptions/") {
            return Purpose::beside(if path.starts_with("/metadata/") {
                "imds"
            } else if path.ends_with("/token") {
                "token"
            } else {
                "discovery"
            });
        }
        let segments = path.split('/').filter(|p| !p.is_empty()).count();
        match (method.as_str(), segments) {
            ("GET", 7) => Purpose::read("zones.list"),
            ("GET", 9) => Purpose::read("recordSets.list"),
            ("GET", _) => Purpose::read("recordSets.get"),
            ("PUT", _) => Purpose::write("recordSets.put"),
            ("DELETE", _) => Purpose::delete("recordSets.delete"),
            _ => Purpose::read("other"),
        }
    }

    const CLOUD: Option<&'static str> = Some("AZURE");

    fn limits() -> Vec<RateLimit> {
        vec![READ_LIMIT, WRITE_LIMIT, DELETE_LIMIT]
    }

    /// Resource Manager counts per subscription: the path's `/subscriptions/{id}/`, lower-case.
    fn account(_: &Method, uri: &Uri, _: &HeaderMap) -> String {
        let mut segments = uri.path().split('/').filter(|p| !p.is_empty());
        match (segments.next(), segments.next()) {
            (Some(s), Some(id)) if s.eq_ignore_ascii_case("subscriptions") => id.to_ascii_lowercase(),
            _ => String::new(),
        }
    }

    /// A DELETE of an absent record set (204) changes nothing.
    fn changed(purpose: &Purpose, status: StatusCode) -> bool {
        purpose.op != Op::Read && status.is_success() && status != StatusCode::NO_CONTENT
    }

    fn throttled(retry_after: Duration) -> Response {
        let mut r = reply(
            StatusCode::TOO_MANY_REQUESTS,
            json!({ "code": "Throttled", "message": "Too many operations are requested. Current operation is throttled." }),
        );
        for (name, value) in [
            ("retry-after", fake::retry_after_seconds(retry_after)),
            ("retry-after-ms", retry_after.as_millis().to_string()),
        ] {
            if let Ok(v) = value.parse() {
                r.headers_mut().insert(name, v);
            }
        }
        r
    }

    fn unavailable(status: StatusCode) -> Response {
        arm_error(status, "ServiceUnavailable", "The service is temporarily unavailable.")
    }
}

type Shared = fake::Shared<FakeAzureState>;

/// A running fake on 127.0.0.1; stops when dropped.
pub struct FakeAzure {
    /// `http://127.0.0.1:<port>`: Resource Manager, the identity platform and IMDS alike.
    pub url: String,
    server: FakeServer<FakeAzureState>,
}

impl FakeAzure {
    /// A fake with these zones, each with its SOA (and, in public DNS, NS) record set as Azure creates them.
    pub fn start(zones: &[(Service, &str)]) -> FakeAzure {
        let mut state = FakeAzureState {
            zones: BTreeSet::new(),
            sets: BTreeMap::new(),
            tokens: BTreeMap::new(),
            token_lifetime: 3599,
            page_limit: 100,
            next_link_base: None,
            interfere: BTreeMap::new(),
            grants: Vec::new(),
            next_etag: 0,
            next_token: 0,
        };
        for (service, zone) in zones {
            let zone = zone.trim_end_matches('.').to_ascii_lowercase();
            state.zones.insert((*service, zone.clone()));
            let soa = json!({ "email": "azuredns-hostmaster.microsoft.com", "host": "ns1-01.azure-dns.com.",
                              "serialNumber": 1, "refreshTime": 3600, "retryTime": 300, "expireTime": 2419200,
                              "minimumTtl": 300 });
            let (soa_key, ttl) = match service {
                Service::Public => ("SOARecord", "TTL"),
                Service::Private => ("soaRecord", "ttl"),
            };
            state.store(*service, &zone, "@", "SOA", json!({ ttl: 3600, soa_key: soa }));
            if *service == Service::Public {
                let ns: Vec<Value> = (1..=4)
                    .map(|i| json!({ "nsdname": format!("ns{i}-01.azure-dns.com.") }))
                    .collect();
                state.store(*service, &zone, "@", "NS", json!({ "TTL": 172800, "NSRecords": ns }));
            }
        }
        let server = FakeServer::serve(state);
        // What Resource Manager asks of a throttled client, in milliseconds as Azure's SDKs read it.
        server.lock().faults.retry_after = Duration::from_millis(20);
        FakeAzure {
            url: server.url.to_string(),
            server,
        }
    }

    /// Where it listens, for [`crate::tls_proxy::TlsProxy::start`].
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }

    /// The fake's state, request log and faults, to read or adjust.
    pub fn state(&self) -> MutexGuard<'_, Locked<FakeAzureState>> {
        self.server.lock()
    }

    /// A token the fake accepts, as if granted.
    pub fn issue_token(&self) -> String {
        self.state().issue("test")
    }

    /// Store a record set directly (someone else's record, or a starting state).
    pub fn seed(&self, service: Service, zone: &str, name: &str, rtype: &str, properties: Value) {
        self.state().store(service, zone, name, rtype, properties);
    }

    /// The record set stored under this name and type.
    pub fn get(&self, service: Service, zone: &str, name: &str, rtype: &str) -> Option<StoredSet> {
        self.state()
            .sets
            .get(&(service, zone.to_string(), name.to_ascii_lowercase(), rtype.to_string()))
            .cloned()
    }

    /// Every record set as `name TYPE properties` (the name absolute, properties as stored), sorted: what
    /// tests compare.
    pub fn lines(&self) -> Vec<String> {
        let s = self.state();
        let mut out: Vec<String> = s
            .sets
            .iter()
            .filter(|((_, _, _, t), _)| t != "SOA" && t != "NS")
            .map(|((_, zone, name, t), set)| {
                let fqdn = if name == "@" {
                    zone.clone()
                } else {
                    format!("{name}.{zone}")
                };
                format!("{fqdn} {t} {}", set.properties)
            })
            .collect();
        out.sort();
        out
    }

    /// An `azure.json` for `cloud: AzureStackCloud` pointing every endpoint at the fake, with these extra
    /// fields (credentials).
    pub fn azure_json(&self, extra: Value) -> String {
        let mut v = json!({
            "cloud": "AzureStackCloud",
            "tenantId": TENANT,
            "subscriptionId": SUBSCRIPTION,
            "resourceGroup": RESOURCE_GROUP,
            "activeDirectoryAuthorityHost": self.url,
            "resourceManagerEndpoint": self.url,
            "resourceManagerAudience": self.url,
        });
        if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
            o.extend(e);
        }
        v.to_string()
    }
}

impl FakeAzureState {
    fn issue(&mut self, what: &str) -> String {
        self.next_token += 1;
        let t = format!("fake-azure-token-{}-{what}", self.next_token);
        let expires = std::time::Instant::now() + std::time::Duration::from_secs(self.token_lifetime);
        self.tokens.insert(t.clone(), expires);
        t
    }

    fn etag(&mut self) -> String {
        self.next_etag += 1;
        format!("{:08x}-0000-0000-0000-{:012x}", self.next_etag, self.next_etag)
    }

    fn store(&mut self, service: Service, zone: &str, name: &str, rtype: &str, properties: Value) -> StoredSet {
        let etag = self.etag();
        let set = StoredSet {
            name: name.to_string(),
            etag,
            properties,
        };
        let key = (service, zone.to_string(), name.to_ascii_lowercase(), rtype.to_string());
        self.sets.insert(key, set.clone());
        set
    }
}

fn reply(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json; charset=utf-8")],
        body.to_string(),
    )
        .into_response()
}

fn arm_error(status: StatusCode, code: &str, message: &str) -> Response {
    let mut r = reply(status, json!({ "error": { "code": code, "message": message } }));
    if let Ok(v) = code.parse() {
        r.headers_mut().insert("x-ms-error-code", v);
    }
    r
}

fn aad_error(status: StatusCode, code: &str, description: &str) -> Response {
    reply(status, json!({ "error": code, "error_description": description }))
}

fn handle(state: &Shared, base: &str, method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Response {
    let path = uri.path();
    if path == "/metadata/identity/oauth2/token" {
        return imds(state, uri, headers);
    }
    if path.ends_with("/oauth2/v2.0/token") {
        return token(state, base, method, path, body);
    }
    if method == Method::GET && path.ends_with("/v2.0/.well-known/openid-configuration") {
        return openid_configuration(base, path, headers);
    }
    if method == Method::GET && path == "/common/discovery/instance" {
        let host = public_base(base, headers);
        let name = host.trim_start_matches("https://");
        return reply(
            StatusCode::OK,
            json!({ "tenant_discovery_endpoint": format!("{host}/{TENANT}/v2.0/.well-known/openid-configuration"),
                    "api-version": "1.1",
                    "metadata": [{ "preferred_network": name, "preferred_cache": name, "aliases": [name] }] }),
        );
    }
    if path.to_ascii_lowercase().starts_with("/subscriptions/") {
        return arm(state, base, method, uri, headers, body);
    }
    arm_error(StatusCode::NOT_FOUND, "NotFound", &format!("no such endpoint: {path}"))
}

/// The base URL a client reached the fake at: `https://<Host>` through the TLS proxy (a real host name),
/// the fake's own URL when called directly.
fn public_base(base: &str, headers: &HeaderMap) -> String {
    match headers.get("host").and_then(|h| h.to_str().ok()) {
        Some(h) if !h.starts_with("127.0.0.1") && !h.starts_with("localhost") => format!("https://{h}"),
        _ => base.to_string(),
    }
}

/// The tenant's OpenID configuration, which MSAL reads before its first token request.
fn openid_configuration(base: &str, path: &str, headers: &HeaderMap) -> Response {
    if path != format!("/{TENANT}/v2.0/.well-known/openid-configuration") {
        return aad_error(
            StatusCode::BAD_REQUEST,
            "invalid_tenant",
            &format!("unknown tenant in {path}"),
        );
    }
    let host = public_base(base, headers);
    reply(
        StatusCode::OK,
        json!({
            "token_endpoint": format!("{host}/{TENANT}/oauth2/v2.0/token"),
            "authorization_endpoint": format!("{host}/{TENANT}/oauth2/v2.0/authorize"),
            "issuer": format!("{host}/{TENANT}/v2.0"),
            "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
            "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
        }),
    )
}

fn imds(state: &Shared, uri: &Uri, headers: &HeaderMap) -> Response {
    if headers.get("metadata").and_then(|v| v.to_str().ok()) != Some("true") {
        return aad_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "Required metadata header not specified",
        );
    }
    let q = fake::query(uri);
    if q.get("api-version").map(String::as_str) != Some("2018-02-01") || !q.contains_key("resource") {
        return aad_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "api-version and resource are required",
        );
    }
    let mut s = fake::lock(state);
    let grant = match q.get("client_id") {
        None => "imds".to_string(),
        Some(c) if c == USER_ASSIGNED_CLIENT_ID => format!("imds {c}"),
        Some(c) => {
            return aad_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &format!("Identity not found: {c}"),
            );
        }
    };
    s.grants.push(grant);
    let t = s.issue("imds");
    reply(
        StatusCode::OK,
        json!({ "access_token": t, "expires_in": s.token_lifetime.to_string(), "expires_on": "1900000000",
                "resource": q.get("resource"), "token_type": "Bearer" }),
    )
}

fn token(state: &Shared, base: &str, method: &Method, path: &str, body: &[u8]) -> Response {
    if method != Method::POST {
        return aad_error(StatusCode::METHOD_NOT_ALLOWED, "invalid_request", "POST only");
    }
    if path != format!("/{TENANT}/oauth2/v2.0/token") {
        return aad_error(
            StatusCode::BAD_REQUEST,
            "invalid_tenant",
            &format!("unknown tenant in {path}"),
        );
    }
    let form: BTreeMap<String, String> = url::form_urlencoded::parse(body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let get = |k: &str| form.get(k).map(String::as_str);
    if get("grant_type") != Some("client_credentials") {
        return aad_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "client_credentials only",
        );
    }
    if get("client_id") != Some(CLIENT_ID) {
        return aad_error(StatusCode::BAD_REQUEST, "unauthorized_client", "unknown client_id");
    }
    // The audiences Resource Manager answers to: the fake's own (AzureStackCloud files), azcore's
    // public-cloud audience, and Resource Manager's URL.
    let scopes = [
        format!("{base}/.default"),
        "https://management.core.windows.net//.default".to_string(),
        "https://management.azure.com/.default".to_string(),
    ];
    if !get("scope").is_some_and(|s| s.split(' ').any(|s| scopes.iter().any(|w| w == s))) {
        return aad_error(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            "scope must be <audience>/.default",
        );
    }
    let grant = match (
        get("client_secret"),
        get("client_assertion_type"),
        get("client_assertion"),
    ) {
        (Some(CLIENT_SECRET), None, None) => "client_secret",
        (None, Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer"), Some(FEDERATED_TOKEN)) => {
            "client_assertion"
        }
        _ => {
            return aad_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "AADSTS7000215: Invalid client secret or assertion",
            );
        }
    };
    let mut s = fake::lock(state);
    s.grants.push(grant.to_string());
    let t = s.issue(grant);
    reply(
        StatusCode::OK,
        json!({ "token_type": "Bearer", "expires_in": s.token_lifetime, "ext_expires_in": s.token_lifetime, "access_token": t }),
    )
}

fn arm(state: &Shared, base: &str, method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) -> Response {
    let mut locked = fake::lock(state);
    let Locked { api: s, faults, .. } = &mut *locked;
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|t| s.tokens.get(t).copied());
    if authorized.is_some_and(|expires| expires <= std::time::Instant::now()) {
        return arm_error(
            StatusCode::UNAUTHORIZED,
            "ExpiredAuthenticationToken",
            "The access token expiry UTC time is earlier than current UTC time.",
        );
    }
    if authorized.is_none() {
        return arm_error(
            StatusCode::UNAUTHORIZED,
            "AuthenticationFailed",
            "Authentication failed. The 'Authorization' header is missing or invalid.",
        );
    }
    let segs: Vec<&str> = uri.path().trim_start_matches('/').split('/').collect();
    // subscriptions/{s}/resourceGroups/{rg}/providers/Microsoft.Network/{service}[/{zone}[/{type}/{name}]]
    let ok_prefix = segs.len() >= 7
        && segs[0].eq_ignore_ascii_case("subscriptions")
        && segs[1] == SUBSCRIPTION
        && segs[2].eq_ignore_ascii_case("resourceGroups")
        && segs[3].eq_ignore_ascii_case(RESOURCE_GROUP)
        && segs[4].eq_ignore_ascii_case("providers")
        && segs[5].eq_ignore_ascii_case("Microsoft.Network");
    if !ok_prefix {
        return arm_error(
            StatusCode::NOT_FOUND,
            "ResourceGroupNotFound",
            &format!("no such resource: {}", uri.path()),
        );
    }
    let service = if segs[6].eq_ignore_ascii_case("dnsZones") {
        Service::Public
    } else if segs[6].eq_ignore_ascii_case("privateDnsZones") {
        Service::Private
    } else {
        return arm_error(StatusCode::NOT_FOUND, "InvalidResourceType", segs[6]);
    };
    let q = fake::query(uri);
    let version = q.get("api-version").map(String::as_str).unwrap_or("");
    if version != service.api_version() {
        return arm_error(
            StatusCode::BAD_REQUEST,
            "NoRegisteredProviderFound",
            &format!(
                "No registered resource provider found for location 'global' and API version '{version}' for type '{}'",
                service.segment()
            ),
        );
    }
    let skip: usize = q.get("$skipToken").and_then(|t| t.parse().ok()).unwrap_or(0);
    let zone_prefix = format!(
        "/subscriptions/{SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP}/providers/{}",
        service.type_name()
    );
    match (method, &segs[7..]) {
        (&Method::GET, []) => {
            let zones: Vec<Value> = s
                .zones
                .iter()
                .filter(|(svc, _)| *svc == service)
                .map(|(_, z)| {
                    json!({ "id": format!("{zone_prefix}/{z}"), "name": z, "type": service.type_name(),
                            "location": "global", "etag": "00000000-0000-0000-0000-000000000001",
                            "properties": { "numberOfRecordSets": 2, "maxNumberOfRecordSets": 25000 } })
                })
                .collect();
            page(s, base, uri, zones, skip)
        }
        (&Method::GET, [zone, all]) if all.eq_ignore_ascii_case("all") => {
            let zone = match zone_in(s, service, zone) {
                Ok(z) => z,
                Err(r) => return r,
            };
            let sets: Vec<Value> = s
                .sets
                .iter()
                .filter(|((svc, z, _, _), _)| *svc == service && *z == zone)
                .map(|((_, _, _, t), set)| record_json(service, &zone_prefix, &zone, t, set))
                .collect();
            page(s, base, uri, sets, skip)
        }
        (m, [zone, rtype, name]) => {
            let zone = match zone_in(s, service, zone) {
                Ok(z) => z,
                Err(r) => return r,
            };
            let rtype = rtype.to_ascii_uppercase();
            if !service.keys().iter().any(|(t, _)| *t == rtype) {
                return unsupported_type(service, &rtype);
            }
            if (*m == Method::PUT || *m == Method::DELETE)
                && let Some((t, props)) = s.interfere.remove(&name.to_ascii_lowercase())
            {
                s.store(service, &zone, name, &t, props);
            }
            let key = (service, zone.clone(), name.to_ascii_lowercase(), rtype.clone());
            let current = s.sets.get(&key).cloned();
            let if_match = headers.get("if-match").and_then(|v| v.to_str().ok());
            let if_none = headers.get("if-none-match").and_then(|v| v.to_str().ok());
            let precondition = match (&current, if_match, if_none) {
                (Some(_), _, Some("*")) => Some("The record set already exists (If-None-Match: *)."),
                (Some(c), Some(e), _) if e != c.etag && e != "*" => Some("The ETag does not match (If-Match)."),
                (None, Some(_), _) => Some("The record set does not exist (If-Match)."),
                _ => None,
            };
            match *m {
                Method::GET => match current {
                    Some(set) => reply(StatusCode::OK, record_json(service, &zone_prefix, &zone, &rtype, &set)),
                    None => arm_error(
                        StatusCode::NOT_FOUND,
                        "NotFound",
                        "The resource record set was not found.",
                    ),
                },
                Method::DELETE => {
                    if let Some(p) = precondition {
                        return arm_error(StatusCode::PRECONDITION_FAILED, "PreconditionFailed", p);
                    }
                    if rtype == "SOA" || (rtype == "NS" && *name == "@") {
                        return arm_error(
                            StatusCode::BAD_REQUEST,
                            "BadRequest",
                            "The zone's own record sets cannot be deleted.",
                        );
                    }
                    match s.sets.remove(&key) {
                        Some(_) => StatusCode::OK.into_response(),
                        None => StatusCode::NO_CONTENT.into_response(),
                    }
                }
                Method::PUT => {
                    if let Some(p) = precondition {
                        return arm_error(StatusCode::PRECONDITION_FAILED, "PreconditionFailed", p);
                    }
                    if !wildcard_name_ok(name) {
                        return arm_error(
                            StatusCode::BAD_REQUEST,
                            "BadRequest",
                            &format!("The record set name {name} is invalid: a '*' may only be its whole first label."),
                        );
                    }
                    if faults.refuses(name) {
                        return arm_error(
                            StatusCode::BAD_REQUEST,
                            "BadRequest",
                            &format!("The record set {name} is refused by this test."),
                        );
                    }
                    let props = match validate(service, &rtype, body) {
                        Ok(p) => p,
                        Err(m) => return arm_error(StatusCode::BAD_REQUEST, "BadRequest", &m),
                    };
                    let created = current.is_none();
                    let set = s.store(service, &zone, name, &rtype, props);
                    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
                    reply(status, record_json(service, &zone_prefix, &zone, &rtype, &set))
                }
                _ => arm_error(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "GET, PUT or DELETE"),
            }
        }
        _ => arm_error(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!("no such resource: {}", uri.path()),
        ),
    }
}

/// A record type the service's api-version does not hold ([`Service::keys`]), refused as Resource Manager
/// refuses a path parameter outside its enum: 400 `BadRequest`, naming the value.
fn unsupported_type(service: Service, rtype: &str) -> Response {
    arm_error(
        StatusCode::BAD_REQUEST,
        "BadRequest",
        &format!(
            "The record type '{rtype}' is not supported by {} at api-version {}.",
            service.segment(),
            service.api_version()
        ),
    )
}

/// The zone a path names, lower-case, or Resource Manager's answer when the resource group has none such.
fn zone_in(s: &FakeAzureState, service: Service, zone: &str) -> Result<String, Response> {
    let zone = zone.to_ascii_lowercase();
    if s.zones.contains(&(service, zone.clone())) {
        return Ok(zone);
    }
    Err(arm_error(
        StatusCode::NOT_FOUND,
        "ParentResourceNotFound",
        &format!("zone {zone} not found"),
    ))
}

fn page(s: &FakeAzureState, base: &str, uri: &Uri, items: Vec<Value>, skip: usize) -> Response {
    let base = s.next_link_base.as_deref().unwrap_or(base);
    let limit = s.page_limit.max(1);
    let end = (skip + limit).min(items.len());
    let value: Vec<Value> = items.get(skip..end).map(<[Value]>::to_vec).unwrap_or_default();
    let mut body = json!({ "value": value });
    if end < items.len() {
        let version = fake::query(uri).get("api-version").cloned().unwrap_or_default();
        body["nextLink"] = json!(format!("{base}{}?api-version={version}&$skipToken={end}", uri.path()));
    }
    reply(StatusCode::OK, body)
}

fn record_json(service: Service, zone_prefix: &str, zone: &str, rtype: &str, set: &StoredSet) -> Value {
    let mut props = set.properties.clone();
    let fqdn = if set.name == "@" {
        format!("{zone}.")
    } else {
        format!("{}.{zone}.", set.name)
    };
    if let Some(o) = props.as_object_mut() {
        o.insert("fqdn".into(), json!(fqdn));
        if service == Service::Public {
            o.insert("provisioningState".into(), json!("Succeeded"));
        } else {
            o.insert("isAutoRegistered".into(), json!(false));
        }
    }
    json!({
        "id": format!("{zone_prefix}/{zone}/{rtype}/{}", set.name),
        "name": set.name,
        "type": format!("{}/{rtype}", service.type_name()),
        "etag": set.etag,
        "properties": props,
    })
}

/// Azure's rule for `*` in a record set name (relative to the zone): the whole name `*`, or `*` as the
/// left-most label (`*.foo`), nowhere else. Source: Microsoft Learn, "Overview of DNS zones and records"
/// and "Overview of Private DNS records" (learn.microsoft.com/azure/dns/dns-private-records), Wildcard
/// records: a wildcard record set is named `*`, or has `*` as its left-most label (`*.foo`). A name such
/// as `a-*` (external-dns's ownership name of a wildcard) is refused.
fn wildcard_name_ok(name: &str) -> bool {
    let rest = if name == "*" {
        ""
    } else {
        name.strip_prefix("*.").unwrap_or(name)
    };
    !rest.contains('*')
}

/// Entries of a record set's metadata, as Azure Resource Manager limits tags (Microsoft Learn, "Use tags to
/// organize your Azure resources", Limitations; Azure DNS documents its metadata as "similar to tags"):
/// at most [`METADATA_MAX_ENTRIES`], a name of at most 512 characters without `<>%&\?/`, a value of at
/// most [`METADATA_VALUE_MAX`] characters. A name with a space is dropped without an error, as Azure DNS
/// drops it (Azure/azure-rest-api-specs#8555).
fn metadata(val: &Value) -> Result<Value, String> {
    let mut kept = serde_json::Map::new();
    for (name, value) in val.as_object().into_iter().flatten() {
        let value = value.as_str().unwrap_or_default();
        if name.is_empty() || name.chars().count() > 512 || name.contains(['<', '>', '%', '&', '\\', '?', '/']) {
            return Err(format!("The metadata name '{name}' is invalid."));
        }
        if value.chars().count() > METADATA_VALUE_MAX {
            return Err(format!(
                "The metadata value of '{name}' is longer than {METADATA_VALUE_MAX} characters."
            ));
        }
        if !name.contains(' ') {
            kept.insert(name.clone(), Value::String(value.to_string()));
        }
    }
    if kept.len() > METADATA_MAX_ENTRIES {
        return Err(format!(
            "A record set takes at most {METADATA_MAX_ENTRIES} metadata entries."
        ));
    }
    Ok(Value::Object(kept))
}

/// Most metadata entries one record set takes (Azure Resource Manager's 50 tags per resource).
pub const METADATA_MAX_ENTRIES: usize = 50;
/// Longest metadata value, in characters (Azure Resource Manager's tag value limit).
pub const METADATA_VALUE_MAX: usize = 256;

/// The properties of a PUT, held to the API's schema: its casing, the record list of the path's type and
/// no other, TXT strings of at most 255 characters (a DNS character-string; Azure PowerShell's
/// `DnsRecordBase.TxtRecordChunkSize` is 255, its `TxtRecordMaxLength` 1,024 for a whole value, which
/// Azure public DNS has since raised to 4,096: hashicorp/terraform-provider-azurerm#24152; an ownership
/// value stays far below either, so only the string length is held here).
fn validate(service: Service, rtype: &str, body: &[u8]) -> Result<Value, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("The request body is not JSON: {e}"))?;
    let Some(props) = v.get("properties").and_then(Value::as_object) else {
        return Err("The request body has no properties.".into());
    };
    let mut out = serde_json::Map::new();
    let want = service
        .keys()
        .iter()
        .find(|(t, _)| *t == rtype)
        .map(|(_, k)| *k)
        .unwrap_or("");
    for (k, val) in props {
        if k == service.ttl_key() {
            let ttl = val.as_i64().filter(|t| (0..=2_147_483_647).contains(t));
            if ttl.is_none() {
                return Err(format!("{k} must be a non-negative integer"));
            }
        } else if k == "metadata" {
            if service == Service::Private && !val.is_object() {
                return Err("metadata must be an object".into());
            }
            if !val.as_object().is_some_and(|m| m.values().all(Value::is_string)) {
                return Err("metadata must map names to strings".into());
            }
            out.insert(k.clone(), metadata(val)?);
            continue;
        } else if k == want {
            let empty = val.as_array().is_some_and(Vec::is_empty) || val.as_object().is_some_and(|o| o.is_empty());
            if empty {
                return Err(format!("{k} must not be empty"));
            }
            if rtype == "TXT" {
                let strings = val
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|r| r.get("value").and_then(Value::as_array).cloned().unwrap_or_default());
                for s in strings {
                    match s.as_str() {
                        Some(s) if s.len() <= 255 => {}
                        _ => return Err("A TXT record string must be a string of at most 255 characters.".into()),
                    }
                }
            }
        } else if ["fqdn", "provisioningState", "isAutoRegistered", "targetResource"].contains(&k.as_str()) {
            continue;
        } else {
            return Err(format!(
                "The property {k} is not valid for a {rtype} record set in this API (api-version {})",
                service.api_version()
            ));
        }
        out.insert(k.clone(), val.clone());
    }
    if !out.contains_key(want) {
        return Err(format!("A {rtype} record set needs {want}."));
    }
    Ok(Value::Object(out))
}

/// external-dns v0.23.0 with its Azure provider (`provider`: `azure` or `azure-private-dns`), unmodified,
/// for one sync as `owner` with the TXT registry: azidentity, MSAL and armdns/armprivatedns reach the fake
/// behind `proxy` at [`AZURE_HOSTS`], with a client secret in an azure.json of the public cloud (written in
/// `home`), as an AKS user writes it.
pub fn external_dns(
    proxy: &crate::tls_proxy::TlsProxy,
    provider: &str,
    owner: &str,
    home: &std::path::Path,
    source: u16,
) -> std::process::Output {
    let file = home.join("azure-public-cloud.json");
    let config = json!({ "tenantId": TENANT, "subscriptionId": SUBSCRIPTION, "resourceGroup": RESOURCE_GROUP,
                         "aadClientId": CLIENT_ID, "aadClientSecret": CLIENT_SECRET });
    std::fs::write(&file, config.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let keep = ["AZURE_", "MSI_", "IDENTITY_", "IMDS_"];
    let mut cmd = crate::differential::external_dns(Some(proxy), home, source, &keep);
    cmd.args(["--registry=txt", "--txt-owner-id", owner, "--policy=sync"])
        .arg(format!("--provider={provider}"))
        .arg(format!("--azure-config-file={}", file.display()));
    crate::cli::run(&mut cmd)
}

impl crate::lines::ZoneLines for FakeAzure {
    fn zone_lines(&self) -> Vec<String> {
        self.lines()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlsa_https_and_svcb_are_no_record_types_of_either_api_version() {
        for service in [Service::Public, Service::Private] {
            for rtype in ["TLSA", "HTTPS", "SVCB"] {
                assert!(!service.keys().iter().any(|(t, _)| *t == rtype), "{rtype}");
                assert_eq!(unsupported_type(service, rtype).status(), StatusCode::BAD_REQUEST);
            }
        }
        assert!(Service::Public.keys().iter().any(|(t, _)| *t == "CAA"));
    }
}
