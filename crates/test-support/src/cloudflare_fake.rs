//! A stateful fake of the part of Cloudflare's v4 API extdns uses, written from Cloudflare's published API
//! reference: zones list/get, DNS records list (paged with `page`/`per_page`/`result_info`), create, patch,
//! put, delete and the transactional batch; strict validation answering Cloudflare's error codes (TLSA, HTTPS
//! and SVCB set through their `data` object, their `content` rendered from it). On the
//! [`crate::fake`] skeleton: throttled as Cloudflare throttles (429, error 971, `Retry-After`) past its
//! documented limit ([`RATE_LIMIT`], per token or per user of a global key), a refused record name answered
//! with error 1004 "DNS Validation Error".

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::MutexGuard;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use crate::fake::{self, Api, FakeServer, Faults, Locked, Purpose, RateLimit};

/// The API token the fake accepts as `Authorization: Bearer`.
pub const TOKEN: &str = "test-token";
/// The global API key and its account's email (the older scheme).
pub const API_KEY: &str = "144c9defac04969c7bfad8efaa8ea194";
/// The email that goes with [`API_KEY`] (`X-Auth-Email`).
pub const API_EMAIL: &str = "user@example.com";
/// A record's comment on the Free plan: at most 100 characters ("Record attributes",
/// developers.cloudflare.com/dns/manage-dns-records/reference/record-attributes).
pub const FREE_COMMENT_LIMIT: usize = 100;
/// A record's comment on the Pro, Business and Enterprise plans: at most 500 characters (same page).
pub const PAID_COMMENT_LIMIT: usize = 500;
/// Operations one batch call accepts on the Free plan: "The number of records that you can operate with in
/// one action depends on your zone plan: Free: 200, Pro: 3,500, Business: 3,500, Enterprise: 3,500"
/// (<https://developers.cloudflare.com/dns/manage-dns-records/how-to/batch-record-changes/>, "Availability
/// and limits").
pub const MAX_BATCH: usize = 200;
/// Operations one batch call accepts on the Pro, Business and Enterprise plans (same page).
pub const PAID_MAX_BATCH: usize = 3500;

/// A zone's plan, as Cloudflare names it in the zone's `plan.legacy_id`; it sets how many operations a
/// batch call on the zone takes ([`Plan::max_batch`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Plan {
    /// `free`, every zone's plan unless a test says otherwise.
    #[default]
    Free,
    /// `pro`.
    Pro,
    /// `business`.
    Business,
    /// `enterprise`.
    Enterprise,
}

impl Plan {
    /// The plan's `legacy_id`, the stable name Cloudflare gives it.
    pub fn legacy_id(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Pro => "pro",
            Plan::Business => "business",
            Plan::Enterprise => "enterprise",
        }
    }

    /// The most operations one batch call on a zone of this plan takes.
    pub fn max_batch(self) -> usize {
        match self {
            Plan::Free => MAX_BATCH,
            Plan::Pro | Plan::Business | Plan::Enterprise => PAID_MAX_BATCH,
        }
    }

    /// The zone's `plan` object as Cloudflare returns it (the fields a client reads).
    fn json(self) -> Value {
        let name = match self {
            Plan::Free => "Free Website",
            Plan::Pro => "Pro Website",
            Plan::Business => "Business Website",
            Plan::Enterprise => "Enterprise Website",
        };
        json!({"id": format!("{:032x}", self as u8), "name": name, "legacy_id": self.legacy_id(), "is_subscribed": self != Plan::Free})
    }
}
/// Cloudflare's documented global rate limit: 1,200 requests per five minutes per user or account token
/// ("If you exceed this limit, all API calls for the next five minutes will be blocked, receiving a HTTP
/// 429"), <https://developers.cloudflare.com/fundamentals/api/reference/limits/>. A sliding window that
/// counts every call, blocked ones too, so a client that keeps calling stays blocked.
pub const RATE_LIMIT: RateLimit = RateLimit::window(1200, Duration::from_secs(300));

/// One DNS record as the fake stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    /// The record id the fake assigned.
    pub id: String,
    /// The id of the zone it belongs to.
    pub zone_id: String,
    /// Fully qualified name, no trailing dot.
    pub name: String,
    /// Record type (`A`, `TXT`, ...).
    pub rtype: String,
    /// The record's `content` (for MX/SRV without the priority).
    pub content: String,
    /// TTL in seconds; 1 is Cloudflare's "automatic".
    pub ttl: u64,
    /// Whether traffic goes through Cloudflare's proxy.
    pub proxied: bool,
    /// The record's comment, when set.
    pub comment: Option<String>,
    /// MX/SRV priority, when the type has one.
    pub priority: Option<u64>,
    /// The structured data of a type set through `data` (TLSA, HTTPS, SVCB), as stored; `content` is then
    /// Cloudflare's rendering of it.
    pub data: Option<Value>,
}

impl Rec {
    fn json(&self, zone_name: &str) -> Value {
        let mut v = json!({
            "id": self.id, "zone_id": self.zone_id, "zone_name": zone_name, "name": self.name,
            "type": self.rtype, "content": self.content, "ttl": self.ttl, "proxied": self.proxied,
            "proxiable": proxiable(&self.rtype), "locked": false, "comment": self.comment, "tags": [],
            "meta": {}, "created_on": "2026-01-01T00:00:00Z", "modified_on": "2026-01-01T00:00:00Z",
        });
        if let Some(p) = self.priority {
            v["priority"] = json!(p);
        }
        if let Some(d) = &self.data {
            v["data"] = d.clone();
        }
        v
    }

    /// `name type content [proxied] [ttl]`, how tests compare.
    pub fn line(&self) -> String {
        let content = match self.priority {
            Some(p) => format!("{p} {}", self.content),
            None => self.content.clone(),
        };
        format!(
            "{} {} {} proxied={} ttl={}",
            self.name, self.rtype, content, self.proxied, self.ttl
        )
    }
}

/// Everything the fake holds and counts; inspect it through [`FakeCloudflare::state`].
#[derive(Debug, Default)]
pub struct FakeState {
    /// Zones as (id, name).
    pub zones: Vec<(String, String)>,
    /// Records by id.
    pub records: BTreeMap<String, Rec>,
    /// Ids by (zone id, name), so conflict checks do not scan the zone.
    names: std::collections::HashMap<(String, String), std::collections::BTreeSet<String>>,
    next_id: u64,
    /// The longest comment the zones' plan takes, in characters: `None` is the Free plan's
    /// [`FREE_COMMENT_LIMIT`]; a test of a paid plan sets [`PAID_COMMENT_LIMIT`].
    pub comment_limit: Option<usize>,
    /// Each zone's plan by zone id; a zone not named is on [`Plan::Free`].
    pub plans: std::collections::HashMap<String, Plan>,
}

impl FakeState {
    fn put(&mut self, r: Rec) {
        self.take(&r.id);
        self.names
            .entry((r.zone_id.clone(), r.name.clone()))
            .or_default()
            .insert(r.id.clone());
        self.records.insert(r.id.clone(), r);
    }

    fn take(&mut self, id: &str) -> Option<Rec> {
        let old = self.records.remove(id)?;
        if let Some(ids) = self.names.get_mut(&(old.zone_id.clone(), old.name.clone())) {
            ids.remove(id);
        }
        Some(old)
    }

    fn zone_name(&self, id: &str) -> Option<String> {
        self.zones.iter().find(|(z, _)| z == id).map(|(_, n)| n.clone())
    }

    /// The zone's plan.
    pub fn plan(&self, zone_id: &str) -> Plan {
        self.plans.get(zone_id).copied().unwrap_or_default()
    }
}

impl Api for FakeState {
    fn routes(_: &str) -> Router<Shared> {
        Router::new()
            .route("/client/v4/zones", get(list_zones))
            .route("/client/v4/zones/{zone}", get(get_zone))
            .route(
                "/client/v4/zones/{zone}/dns_records",
                get(list_records).post(create_record),
            )
            .route("/client/v4/zones/{zone}/dns_records/batch", post(batch))
            .route(
                "/client/v4/zones/{zone}/dns_records/{id}",
                get(record_call).patch(record_call).put(record_call).delete(record_call),
            )
    }

    fn purpose(method: &Method, uri: &Uri, _: &HeaderMap) -> Purpose {
        let path = uri.path().trim_start_matches("/client/v4/zones");
        let parts = path.split('/').filter(|p| !p.is_empty()).count();
        match (method.as_str(), parts, path.ends_with("/batch")) {
            (_, 0, _) => Purpose::read("zones.list"),
            (_, 1, _) => Purpose::read("zones.get"),
            ("GET", 2, _) => Purpose::read("records.list"),
            (_, 2, _) => Purpose::write("records.create"),
            (_, _, true) => Purpose::write("batch"),
            ("GET", _, _) => Purpose::read("record"),
            ("DELETE", _, _) => Purpose::delete("record"),
            _ => Purpose::write("record"),
        }
    }

    const CLOUD: Option<&'static str> = Some("CLOUDFLARE");

    fn limits() -> Vec<RateLimit> {
        vec![RATE_LIMIT]
    }

    /// Cloudflare counts per user or token: the bearer token, or the global key's email.
    fn account(_: &Method, _: &Uri, headers: &HeaderMap) -> String {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        match (header("authorization"), header("x-auth-email")) {
            (Some(bearer), _) => bearer.trim_start_matches("Bearer ").to_string(),
            (None, Some(email)) => email.to_string(),
            (None, None) => String::new(),
        }
    }

    fn throttled(retry_after: Duration) -> Response {
        let mut r = error_response(fail(
            StatusCode::TOO_MANY_REQUESTS,
            971,
            "Please wait and consider throttling your request speed",
        ));
        if let Ok(v) = fake::retry_after_seconds(retry_after).parse() {
            r.headers_mut().insert("retry-after", v);
        }
        r
    }

    fn unavailable(status: StatusCode) -> Response {
        error_response(fail(status, 10000, "Internal server error"))
    }
}

type Shared = fake::Shared<FakeState>;

/// A running fake of Cloudflare's v4 API on 127.0.0.1; stops when dropped.
pub struct FakeCloudflare {
    /// The base URL, `http://127.0.0.1:<port>/client/v4`.
    pub url: String,
    server: FakeServer<FakeState>,
}

impl FakeCloudflare {
    /// A fake serving these zones (`(id, name)`).
    pub fn start(zones: &[(&str, &str)]) -> FakeCloudflare {
        let state = FakeState {
            zones: zones.iter().map(|(i, n)| (i.to_string(), n.to_string())).collect(),
            ..FakeState::default()
        };
        let server = FakeServer::serve(state);
        FakeCloudflare {
            url: format!("{}/client/v4", server.url),
            server,
        }
    }

    /// The address the fake listens on, for a TLS proxy that answers as `api.cloudflare.com`.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }

    /// The fake's state, request log and faults, locked (a poisoned lock is taken anyway).
    pub fn state(&self) -> MutexGuard<'_, Locked<FakeState>> {
        self.server.lock()
    }

    /// Add a record directly (someone else's, made in the dashboard).
    pub fn seed(&self, zone_id: &str, name: &str, rtype: &str, content: &str) -> String {
        let mut s = self.state();
        s.next_id += 1;
        let id = format!("{:032x}", s.next_id);
        s.put(Rec {
            id: id.clone(),
            zone_id: zone_id.into(),
            name: name.into(),
            rtype: rtype.into(),
            content: content.into(),
            ttl: 1,
            proxied: false,
            comment: None,
            priority: None,
            data: None,
        });
        id
    }

    /// Puts a zone on another plan (every zone starts on [`Plan::Free`]): its batch limit follows.
    pub fn set_plan(&self, zone_id: &str, plan: Plan) {
        self.state().plans.insert(zone_id.to_string(), plan);
    }

    /// Every record as [`Rec::line`], sorted.
    pub fn lines(&self) -> Vec<String> {
        let mut v: Vec<String> = self.state().records.values().map(Rec::line).collect();
        v.sort();
        v
    }
}

type Err = (StatusCode, Vec<(i64, String)>);

fn fail(status: StatusCode, code: i64, message: impl Into<String>) -> Err {
    (status, vec![(code, message.into())])
}

fn error_response((status, errors): Err) -> Response {
    let errors: Vec<Value> = errors.iter().map(|(c, m)| json!({"code": c, "message": m})).collect();
    (
        status,
        [("content-type", "application/json")],
        json!({"success": false, "errors": errors, "messages": [], "result": null}).to_string(),
    )
        .into_response()
}

fn ok(result: Value, info: Option<Value>) -> Response {
    let mut body = json!({"success": true, "errors": [], "messages": [], "result": result});
    if let Some(i) = info {
        body["result_info"] = i;
    }
    (StatusCode::OK, [("content-type", "application/json")], body.to_string()).into_response()
}

/// Authentication, shared by every route: `Some` answer when the request is turned away.
fn authenticate(headers: &HeaderMap) -> Option<Response> {
    let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok());
    if let (Some(key), Some(email)) = (header("x-auth-key"), header("x-auth-email")) {
        return (key != API_KEY || email != API_EMAIL)
            .then(|| error_response(fail(StatusCode::FORBIDDEN, 9103, "Unknown X-Auth-Key or X-Auth-Email")));
    }
    match headers.get("authorization").and_then(|v| v.to_str().ok()) {
        Some(v) if v == format!("Bearer {TOKEN}") => None,
        Some(_) => Some(error_response(fail(
            StatusCode::FORBIDDEN,
            9109,
            "Invalid access token",
        ))),
        None => Some(error_response(fail(
            StatusCode::BAD_REQUEST,
            9106,
            "Missing X-Auth-Key, X-Auth-Email or Authorization headers",
        ))),
    }
}

/// `page`/`per_page` of a list, validated as Cloudflare does.
fn paging(q: &BTreeMap<String, String>, default: usize, max: usize) -> Result<(usize, usize), Err> {
    let num = |k: &str, d: usize| match q.get(k) {
        None => Ok(d),
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| fail(StatusCode::BAD_REQUEST, 1004, format!("{k} must be a number"))),
    };
    let (page, per_page) = (num("page", 1)?, num("per_page", default)?);
    if page == 0 || per_page == 0 || per_page > max {
        return Err(fail(
            StatusCode::BAD_REQUEST,
            1004,
            format!("per_page must be between 1 and {max}, page at least 1"),
        ));
    }
    Ok((page, per_page))
}

/// A list call: [`authenticate`], the page its query asks for (`default` items a page unless it says, at most
/// `max`), then that page of what `items` lists.
fn list(
    state: &Shared,
    headers: &HeaderMap,
    raw: &Option<String>,
    (default, max): (usize, usize),
    items: impl FnOnce(&FakeState) -> Result<Vec<Value>, Err>,
) -> Response {
    if let Some(r) = authenticate(headers) {
        return r;
    }
    let (page, per_page) = match paging(&fake::query_pairs(raw.as_deref()), default, max) {
        Ok(p) => p,
        Err(e) => return error_response(e),
    };
    let s = fake::lock(state);
    match items(&s) {
        Ok(items) => page_of(items, page, per_page),
        Err(e) => error_response(e),
    }
}

fn page_of(items: Vec<Value>, page: usize, per_page: usize) -> Response {
    let total = items.len();
    let total_pages = total.div_ceil(per_page).max(1);
    let slice: Vec<Value> = items.into_iter().skip((page - 1) * per_page).take(per_page).collect();
    let info = json!({"page": page, "per_page": per_page, "count": slice.len(), "total_count": total, "total_pages": total_pages});
    ok(Value::Array(slice), Some(info))
}

async fn list_zones(State(state): State<Shared>, headers: HeaderMap, RawQuery(raw): RawQuery) -> Response {
    list(&state, &headers, &raw, (20, 50), |s| {
        let zone = |(id, name): &(String, String)| json!({"id": id, "name": name, "status": "active", "paused": false, "type": "full", "plan": s.plan(id).json()});
        Ok(s.zones.iter().map(zone).collect())
    })
}

async fn get_zone(State(state): State<Shared>, headers: HeaderMap, Path(zone): Path<String>) -> Response {
    if let Some(r) = authenticate(&headers) {
        return r;
    }
    let s = fake::lock(&state);
    match s.zone_name(&zone) {
        Some(name) => ok(
            json!({"id": zone, "name": name, "status": "active", "plan": s.plan(&zone).json()}),
            None,
        ),
        None => error_response(fail(StatusCode::NOT_FOUND, 1001, "Invalid zone identifier")),
    }
}

async fn list_records(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path(zone): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    list(&state, &headers, &raw, (100, 5000), |s| {
        let Some(zone_name) = s.zone_name(&zone) else {
            return Err(fail(
                StatusCode::NOT_FOUND,
                7003,
                "Could not route to /zones, perhaps your object identifier is invalid?",
            ));
        };
        let records = s.records.values().filter(|r| r.zone_id == zone);
        Ok(records.map(|r| r.json(&zone_name)).collect())
    })
}

fn proxiable(t: &str) -> bool {
    matches!(t, "A" | "AAAA" | "CNAME")
}

const FIELDS: [&str; 9] = [
    "name", "type", "content", "ttl", "proxied", "comment", "priority", "tags", "data",
];

/// The types whose record is set through a `data` object, `content` being read-only (Cloudflare's API
/// reference, "DNS Records for a Zone", each type's schema: "content: Formatted TLSA content. See 'data' to
/// set TLSA properties.", the same for HTTPS and SVCB; external-dns v0.23.0 writes TLSA as `data` because
/// "the API rejects TLSA sent as content").
fn set_through_data(t: &str) -> bool {
    matches!(t, "TLSA" | "HTTPS" | "SVCB")
}

/// The `data` of a TLSA, HTTPS or SVCB record checked against its schema, and the `content` Cloudflare
/// renders from it. TLSA: `{usage, selector, matching_type, certificate}`, the three numbers one octet
/// each, the certificate hex; its content `usage selector matching_type CERTIFICATE`, the hex upper-case
/// as Cloudflare answers it (external-dns v0.23.0 lower-cases it on reading: "Cloudflare returns the digest
/// uppercase"). HTTPS and SVCB: `{priority, target, value}`, `value` the SvcParams in presentation format;
/// the content `priority target value` (RFC 9460 presentation format, [`crate::rdata::svcb`]).
fn rendered(rtype: &str, data: &Value) -> Result<String, String> {
    let Some(d) = data.as_object() else {
        return Err("data must be an object".into());
    };
    let allowed: &[&str] = match rtype {
        "TLSA" => &["usage", "selector", "matching_type", "certificate"],
        _ => &["priority", "target", "value"],
    };
    if let Some(k) = d.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("data.{k} is not a field of a {rtype} record"));
    }
    let number = |k: &str, most: u64| {
        d.get(k)
            .and_then(Value::as_u64)
            .filter(|n| *n <= most)
            .ok_or_else(|| format!("data.{k} must be a number from 0 to {most}"))
    };
    let text = |k: &str| {
        d.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("data.{k} must be a string"))
    };
    if rtype == "TLSA" {
        let (u, s, m) = (
            number("usage", 255)?,
            number("selector", 255)?,
            number("matching_type", 255)?,
        );
        let cert = text("certificate")?;
        if !crate::rdata::is_hex(cert) {
            return Err("data.certificate must be hex".into());
        }
        return Ok(format!("{u} {s} {m} {}", cert.to_ascii_uppercase()));
    }
    let content = format!("{} {} {}", number("priority", 65535)?, text("target")?, text("value")?);
    let content = content.trim_end().to_string();
    crate::rdata::svcb(&content).map(|_| content)
}

/// The record `body` describes, checked as Cloudflare checks it. `base` is the record a PATCH starts from.
fn validate(body: &Value, zone_id: &str, zone_name: &str, base: Option<&Rec>, allow_id: bool) -> Result<Rec, Err> {
    let bad = |code: i64, m: &str| fail(StatusCode::BAD_REQUEST, code, m);
    let Some(obj) = body.as_object() else {
        return Err(bad(9207, "Request body is invalid."));
    };
    for k in obj.keys() {
        if !(FIELDS.contains(&k.as_str()) || (allow_id && k == "id")) {
            return Err(bad(9207, &format!("Request body is invalid: unknown field {k:?}")));
        }
    }
    let string = |k: &str, fallback: Option<String>| -> Result<Option<String>, Err> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(fallback),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad(9207, &format!("{k} must be a string"))),
        }
    };
    let name = string("name", base.map(|b| b.name.clone()))?
        .ok_or_else(|| bad(9000, "DNS name is invalid."))?
        .trim_end_matches('.')
        .to_ascii_lowercase();
    if !(name == zone_name || name.ends_with(&format!(".{zone_name}")))
        || name.split('.').any(|l| l.is_empty() || l.len() > 63)
    {
        return Err(bad(9000, "DNS name is invalid."));
    }
    let rtype =
        string("type", base.map(|b| b.rtype.clone()))?.ok_or_else(|| bad(9001, "DNS record type is invalid."))?;
    let data = match obj.get("data") {
        Some(d) if set_through_data(&rtype) => Some(d.clone()),
        Some(_) => {
            return Err(bad(
                9207,
                &format!("Request body is invalid: a {rtype} record takes no data"),
            ));
        }
        None if set_through_data(&rtype) => match base.and_then(|b| b.data.clone()) {
            Some(d) => Some(d),
            None => {
                return Err(bad(
                    1004,
                    &format!("DNS Validation Error: a {rtype} record is set through data, not content"),
                ));
            }
        },
        None => None,
    };
    let content = match &data {
        Some(d) => rendered(&rtype, d).map_err(|m| bad(1004, &format!("DNS Validation Error: {m}")))?,
        None => string("content", base.map(|b| b.content.clone()))?
            .ok_or_else(|| bad(9002, "DNS record content is invalid."))?,
    };
    match rtype.as_str() {
        "A" if content.parse::<Ipv4Addr>().is_err() => {
            return Err(bad(9005, "Content for A record must be a valid IPv4 address."));
        }
        "AAAA" if content.parse::<Ipv6Addr>().is_err() => {
            return Err(bad(9006, "Content for AAAA record must be a valid IPv6 address."));
        }
        "CNAME" | "NS" | "MX"
            if content.parse::<IpAddr>().is_ok()
                || content.is_empty()
                || !content.chars().all(|c| c.is_ascii_alphanumeric() || "-._*".contains(c)) =>
        {
            return Err(bad(9007, &format!("Content for {rtype} record is invalid.")));
        }
        "TXT" if content.len() > 2048 => return Err(bad(9100, "TXT content is too long.")),
        "A" | "AAAA" | "CNAME" | "TXT" | "MX" | "NS" | "TLSA" | "HTTPS" | "SVCB" => {}
        _ => return Err(bad(9001, "DNS record type is invalid.")),
    }
    // TXT content is quoted character-strings of at most 255 octets each, and "strings exceeding this
    // allowed maximum length are automatically split" (the TXT record's `content` in Cloudflare's API
    // schema, api.cloudflare.com/schemas): kept, and read back, as the split strings.
    let content = if rtype == "TXT" {
        extdns_endpoint::txt::fitted(&content).into_owned()
    } else {
        content
    };
    let ttl = match obj.get("ttl") {
        None => base.map(|b| b.ttl).unwrap_or(1),
        Some(v) => v.as_u64().ok_or_else(|| bad(9207, "ttl must be a number"))?,
    };
    if !(ttl == 1 || (60..=86400).contains(&ttl)) {
        return Err(bad(
            9021,
            "Invalid TTL. Must be between 60 and 86400 seconds, or 1 for Automatic.",
        ));
    }
    let proxied = match obj.get("proxied") {
        None => base.map(|b| b.proxied).unwrap_or(false),
        Some(v) => v.as_bool().ok_or_else(|| bad(9207, "proxied must be a boolean"))?,
    };
    if proxied && !proxiable(&rtype) {
        return Err(bad(9004, "This record type cannot be proxied."));
    }
    let priority = match obj.get("priority") {
        None => base.and_then(|b| b.priority),
        Some(v) => Some(
            v.as_u64()
                .filter(|p| *p <= 65535)
                .ok_or_else(|| bad(9207, "priority must be 0..65535"))?,
        ),
    };
    if rtype == "MX" && priority.is_none() {
        return Err(bad(9101, "MX records require a priority."));
    }
    let comment = string("comment", base.and_then(|b| b.comment.clone()))?;
    if comment.as_ref().is_some_and(|c| c.contains(['\n', '\r'])) {
        return Err(bad(
            9102,
            "Comments cannot contain newline or carriage return characters.",
        ));
    }
    let priority = priority.filter(|_| rtype == "MX");
    Ok(Rec {
        id: base.map(|b| b.id.clone()).unwrap_or_default(),
        zone_id: zone_id.into(),
        name,
        rtype,
        content,
        ttl: if proxied { 1 } else { ttl },
        proxied,
        comment,
        priority,
        data,
    })
}

/// Name conflicts against the other records of the zone.
fn conflicts(s: &FakeState, r: &Rec) -> Result<(), Err> {
    let ids = s.names.get(&(r.zone_id.clone(), r.name.clone()));
    for other in ids
        .into_iter()
        .flatten()
        .filter_map(|id| s.records.get(id))
        .filter(|o| o.id != r.id)
    {
        if other.rtype == r.rtype && other.content == r.content && other.priority == r.priority {
            return Err(fail(
                StatusCode::BAD_REQUEST,
                81058,
                "An identical record already exists.",
            ));
        }
        if (other.rtype == "CNAME") != (r.rtype == "CNAME")
            && !matches!((other.rtype.as_str(), r.rtype.as_str()), ("TXT", _) | (_, "TXT"))
        {
            return Err(fail(
                StatusCode::BAD_REQUEST,
                81053,
                "An A, AAAA, or CNAME record with that host already exists.",
            ));
        }
    }
    Ok(())
}

/// A comment longer than the plan takes is refused as Cloudflare refuses it (400, error 9102); length in
/// characters, as Cloudflare counts it.
fn comment_fits(s: &FakeState, r: &Rec) -> Result<(), Err> {
    let limit = s.comment_limit.unwrap_or(FREE_COMMENT_LIMIT);
    match &r.comment {
        Some(c) if c.chars().count() > limit => Err(fail(
            StatusCode::BAD_REQUEST,
            9102,
            format!("DNS record comment is longer than {limit} characters."),
        )),
        _ => Ok(()),
    }
}

fn insert_new(s: &mut FakeState, mut r: Rec) -> Result<Rec, Err> {
    comment_fits(s, &r)?;
    conflicts(s, &r)?;
    s.next_id += 1;
    r.id = format!("{:032x}", s.next_id);
    s.put(r.clone());
    Ok(r)
}

fn replace(s: &mut FakeState, r: Rec) -> Result<Rec, Err> {
    comment_fits(s, &r)?;
    conflicts(s, &r)?;
    s.put(r.clone());
    Ok(r)
}

/// A record whose name a test refused ([`Faults::refuse`]) is refused as Cloudflare refuses a name it will
/// not take: 400, error 1004.
fn admit(faults: &Faults, r: Rec) -> Result<Rec, Err> {
    if faults.refuses(&r.name) {
        return Err(fail(
            StatusCode::BAD_REQUEST,
            1004,
            format!("DNS Validation Error: {} is refused", r.name),
        ));
    }
    Ok(r)
}

fn parse(body: &Bytes) -> Result<Value, Err> {
    serde_json::from_slice(body)
        .map_err(|e| fail(StatusCode::BAD_REQUEST, 9207, format!("Request body is invalid: {e}")))
}

fn zone_of(s: &FakeState, zone: &str) -> Result<String, Err> {
    s.zone_name(zone).ok_or_else(|| {
        fail(
            StatusCode::NOT_FOUND,
            7003,
            "Could not route to /zones, perhaps your object identifier is invalid?",
        )
    })
}

fn existing<'a>(s: &'a FakeState, zone: &str, id: &str) -> Result<&'a Rec, Err> {
    s.records
        .get(id)
        .filter(|r| r.zone_id == zone)
        .ok_or_else(|| fail(StatusCode::NOT_FOUND, 81044, "Record does not exist."))
}

/// One call on a single record: [`authenticate`] first, then `f` on the locked state and the faults, its
/// value the answer's `result`.
fn answer(
    state: &Shared,
    headers: &HeaderMap,
    f: impl FnOnce(&mut FakeState, &Faults) -> Result<Value, Err>,
) -> Response {
    if let Some(r) = authenticate(headers) {
        return r;
    }
    let mut guard = fake::lock(state);
    let s = &mut *guard;
    f(&mut s.api, &s.faults)
        .map(|v| ok(v, None))
        .unwrap_or_else(error_response)
}

async fn create_record(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path(zone): Path<String>,
    body: Bytes,
) -> Response {
    answer(&state, &headers, |s, faults| {
        let zn = zone_of(s, &zone)?;
        let r = admit(faults, validate(&parse(&body)?, &zone, &zn, None, false)?)?;
        Ok(insert_new(s, r)?.json(&zn))
    })
}

/// A call on one record, by its method: GET reads it, PATCH changes the fields the body names, PUT replaces
/// it, DELETE removes it.
async fn record_call(
    method: Method,
    State(state): State<Shared>,
    headers: HeaderMap,
    Path((zone, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    answer(&state, &headers, |s, faults| {
        let zn = zone_of(s, &zone)?;
        let base = existing(s, &zone, &id)?.clone();
        match method {
            Method::GET => Ok(base.json(&zn)),
            Method::DELETE => {
                s.take(&id);
                Ok(json!({"id": id}))
            }
            _ => {
                let patch = method == Method::PATCH;
                let mut r = admit(
                    faults,
                    validate(&parse(&body)?, &zone, &zn, patch.then_some(&base), false)?,
                )?;
                r.id = id.clone();
                Ok(replace(s, r)?.json(&zn))
            }
        }
    })
}

/// The batch: deletes, patches, puts, posts, in that order, on a copy of the zone that replaces it only when
/// every operation succeeded.
async fn batch(State(state): State<Shared>, headers: HeaderMap, Path(zone): Path<String>, body: Bytes) -> Response {
    if let Some(r) = authenticate(&headers) {
        return r;
    }
    let mut locked = fake::lock(&state);
    let Locked { api: guard, faults, .. } = &mut *locked;
    let result = (|| {
        let zn = zone_of(guard, &zone)?;
        let v = parse(&body)?;
        let Some(obj) = v.as_object() else {
            return Err(fail(StatusCode::BAD_REQUEST, 9207, "Request body is invalid."));
        };
        let empty = Vec::new();
        let list = |k: &str| -> Result<&Vec<Value>, Err> {
            match obj.get(k) {
                None => Ok(&empty),
                Some(Value::Array(a)) => Ok(a),
                Some(_) => Err(fail(StatusCode::BAD_REQUEST, 9207, format!("{k} must be an array"))),
            }
        };
        for k in obj.keys() {
            if !["deletes", "patches", "puts", "posts"].contains(&k.as_str()) {
                return Err(fail(
                    StatusCode::BAD_REQUEST,
                    9207,
                    format!("Request body is invalid: unknown field {k:?}"),
                ));
            }
        }
        let (deletes, patches, puts, posts) = (list("deletes")?, list("patches")?, list("puts")?, list("posts")?);
        let max = guard.plan(&zone).max_batch();
        if deletes.len() + patches.len() + puts.len() + posts.len() > max {
            return Err(fail(
                StatusCode::BAD_REQUEST,
                1004,
                format!("DNS Validation Error: a batch takes at most {max} operations on this zone's plan"),
            ));
        }
        let mut work = FakeState {
            zones: guard.zones.clone(),
            records: guard.records.clone(),
            names: guard.names.clone(),
            next_id: guard.next_id,
            comment_limit: guard.comment_limit,
            plans: guard.plans.clone(),
        };
        let id_of = |v: &Value| -> Result<String, Err> {
            v.get("id").and_then(Value::as_str).map(str::to_string).ok_or_else(|| {
                fail(
                    StatusCode::BAD_REQUEST,
                    9207,
                    "Request body is invalid: an operation has no id",
                )
            })
        };
        let mut out = Map::new();
        let mut done = Vec::new();
        for d in deletes {
            if d.as_object().is_some_and(|o| o.keys().any(|k| k != "id")) {
                return Err(fail(
                    StatusCode::BAD_REQUEST,
                    9207,
                    "Request body is invalid: a delete takes only an id",
                ));
            }
            let id = id_of(d)?;
            existing(&work, &zone, &id)?;
            work.take(&id);
            done.push(json!({"id": id}));
        }
        out.insert("deletes".into(), Value::Array(std::mem::take(&mut done)));
        for (ops, is_patch) in [(patches, true), (puts, false)] {
            for p in ops {
                let id = id_of(p)?;
                let base = existing(&work, &zone, &id)?.clone();
                let mut r = admit(faults, validate(p, &zone, &zn, is_patch.then_some(&base), true)?)?;
                r.id = id;
                done.push(replace(&mut work, r)?.json(&zn));
            }
            out.insert(
                if is_patch { "patches" } else { "puts" }.into(),
                Value::Array(std::mem::take(&mut done)),
            );
        }
        for p in posts {
            let r = admit(faults, validate(p, &zone, &zn, None, false)?)?;
            done.push(insert_new(&mut work, r)?.json(&zn));
        }
        out.insert("posts".into(), Value::Array(done));
        guard.records = work.records;
        guard.names = work.names;
        guard.next_id = work.next_id;
        Ok(Value::Object(out))
    })();
    result.map(|v| ok(v, None)).unwrap_or_else(error_response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(body: Value) -> Result<Rec, String> {
        validate(&body, "z1", "example.com", None, false).map_err(|(_, e)| format!("{e:?}"))
    }

    #[test]
    fn tlsa_is_set_through_data_and_rendered_with_upper_case_hex() -> Result<(), String> {
        let data = json!({"usage": 3, "selector": 1, "matching_type": 1, "certificate": "0a0b0c0d"});
        let r = check(json!({"name": "_443._tcp.example.com", "type": "TLSA", "ttl": 1, "data": data}))?;
        assert_eq!(r.content, "3 1 1 0A0B0C0D");
        assert_eq!(r.json("example.com")["data"], data, "data answered as stored");
        let as_content = check(json!({"name": "_443._tcp.example.com", "type": "TLSA", "content": "3 1 1 0a0b"}));
        assert!(as_content.is_err_and(|e| e.contains("set through data")));
        let bad_hex = json!({"usage": 3, "selector": 1, "matching_type": 1, "certificate": "xyz"});
        assert!(check(json!({"name": "a.example.com", "type": "TLSA", "data": bad_hex})).is_err());
        let a_with_data = json!({"name": "a.example.com", "type": "A", "content": "192.0.2.1", "data": {}});
        assert!(check(a_with_data).is_err());
        Ok(())
    }

    #[test]
    fn https_and_svcb_data_render_as_presentation_format() -> Result<(), String> {
        let data = json!({"priority": 1, "target": ".", "value": "alpn=\"h3,h2\" port=\"8443\""});
        let r = check(json!({"name": "example.com", "type": "HTTPS", "data": data}))?;
        assert_eq!(r.content, "1 . alpn=\"h3,h2\" port=\"8443\"");
        let alias = json!({"priority": 0, "target": "svc.example.net", "value": ""});
        let r = check(json!({"name": "_dns.example.com", "type": "SVCB", "data": alias}))?;
        assert_eq!(r.content, "0 svc.example.net");
        let bad = json!({"priority": 1, "target": ".", "value": "port=http"});
        assert!(check(json!({"name": "example.com", "type": "HTTPS", "data": bad})).is_err());
        let stray = json!({"priority": 1, "target": ".", "value": "", "usage": 1});
        assert!(check(json!({"name": "example.com", "type": "SVCB", "data": stray})).is_err());
        Ok(())
    }
}
