//! A stateful fake of the part of Pi-hole's v6 REST API external-dns and extdns use, written from Pi-hole's
//! published API reference (FTL's OpenAPI specification, `src/api/docs/content/specs/{auth,config}.yaml`):
//!
//! - sessions: `POST /api/auth` with `{"password"}` answers a session id (`sid`) valid for a configurable
//!   time, extended by every use; a wrong password is a 401 with `session.valid: false` and `message:
//!   "password incorrect"`; `GET /api/auth` reports the session, `DELETE /api/auth` ends it; at most
//!   `max_sessions` at once (FTL's `webserver.api.max_sessions`), a login beyond them a 429. The id is read
//!   from the `X-FTL-SID` or `sid` header or the `sid` query parameter; a missing, unknown or expired one
//!   is a 401 `{"error": {"key": "unauthorized", "message": "Unauthorized"}}`. Without a password every
//!   call is open.
//! - `GET /api/config/dns/hosts` and `/cnameRecords`: `{"config": {"dns": {<list>: [...]}}, "took"}`.
//! - `PUT /api/config/dns/<list>/<item>` (201) and `DELETE` (204): an item already present is a 400 `Item
//!   already present`, a missing one a 404; an item FTL's validators refuse a 400 `Invalid value` naming
//!   it (`dns.hosts[3]: invalid hostname ("*.example.org")`); a CNAME list dnsmasq refuses (two CNAMEs for
//!   one name) a 400 `Invalid configuration`.
//!
//! With [`FakePihole::with_dnsmasq`] the lists feed a real dnsmasq ([`crate::dnsmasq`]) after every change,
//! and CNAME lists are checked by `dnsmasq --test` as FTL checks them. On the [`crate::fake`] skeleton: an
//! item naming a refused record is refused as FTL's validator refuses one (400 `Invalid value`); FTL
//! documents no rate limit, so a throttled call is answered as its other limit, the API seats, is (429).

// A handler's refusal is its answer: helpers return it as the `Err` they are checked with.
#![allow(clippy::result_large_err)]

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use base64::Engine;
use serde_json::{Value, json};

use crate::dnsmasq::Dnsmasq;
use crate::fake::{self, Api, FakeServer, Locked, Purpose};

/// The password the fakes of these tests are protected by.
pub const PASSWORD: &str = "correct horse battery staple";

/// One login's session.
#[derive(Debug, Clone)]
struct Session {
    sid: String,
    valid_until: Instant,
}

/// Everything the fake holds and counts; inspect it through [`FakePihole::state`].
#[derive(Default)]
pub struct FakeState {
    /// `dns.hosts`, in order.
    pub hosts: Vec<String>,
    /// `dns.cnameRecords`, in order.
    pub cnames: Vec<String>,
    /// The web interface password; `None` for an open Pi-hole.
    pub password: Option<String>,
    /// How long a session lasts without use (FTL's `webserver.session.timeout`, 1800 s by default).
    pub validity: Duration,
    /// Most sessions at once (FTL's `webserver.api.max_sessions`, 16 by default).
    pub max_sessions: usize,
    sessions: Vec<Session>,
    /// Successful logins.
    pub logins: usize,
    /// Logins refused for a wrong password.
    pub refused_logins: usize,
    /// Calls answered 401 for a missing, unknown or expired session.
    pub unauthorized: usize,
    dns: Option<Dnsmasq>,
    counter: u64,
}

impl FakeState {
    /// Ends every session now, as their expiry would.
    pub fn expire_sessions(&mut self) {
        self.sessions.clear();
    }

    /// Sessions still valid.
    pub fn sessions(&self) -> usize {
        let now = Instant::now();
        self.sessions.iter().filter(|s| s.valid_until > now).count()
    }

    fn list(&mut self, name: &str) -> Option<&mut Vec<String>> {
        match name {
            "hosts" => Some(&mut self.hosts),
            "cnameRecords" => Some(&mut self.cnames),
            _ => None,
        }
    }

    /// Loads the lists into dnsmasq, when there is one.
    fn publish(&mut self) -> Result<(), String> {
        let (hosts, cnames) = (self.hosts.clone(), self.cnames.clone());
        match &mut self.dns {
            Some(d) => d.load(&hosts, &cnames),
            None => Ok(()),
        }
    }
}

impl Api for FakeState {
    fn routes(_: &str) -> Router<Shared> {
        Router::new()
            .route("/api/auth", get(auth_get).post(auth_post).delete(auth_delete))
            .route("/api/config/dns/{list}", get(list_get))
            .route("/api/config/dns/{list}/{item}", put(item).delete(item))
            .fallback(not_found)
    }

    fn purpose(method: &Method, uri: &Uri, _: &HeaderMap) -> Purpose {
        let path = uri.path();
        if path.starts_with("/api/auth") {
            // A session changes no record.
            Purpose::read("auth")
        } else if !path.starts_with("/api/config/dns/") {
            Purpose::read("other")
        } else if *method == Method::GET {
            Purpose::read("list")
        } else if *method == Method::PUT {
            Purpose::write("item.put")
        } else {
            Purpose::delete("item.delete")
        }
    }

    fn throttled(retry_after: Duration) -> Response {
        let mut r = error(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limiting",
            "Rate-limiting",
            Some("slow down".into()),
        );
        if let Ok(v) = fake::retry_after_seconds(retry_after).parse() {
            r.headers_mut().insert("retry-after", v);
        }
        r
    }

    fn unavailable(status: StatusCode) -> Response {
        error(status, "service_unavailable", "FTL is restarting", None)
    }
}

type Shared = fake::Shared<FakeState>;

/// A running fake of Pi-hole's API on 127.0.0.1; stops when dropped.
pub struct FakePihole {
    /// The base URL (`--pihole-server`), `http://127.0.0.1:<port>`.
    pub url: String,
    server: FakeServer<FakeState>,
}

impl FakePihole {
    /// A fake protected by `password` (or open, with `None`), with FTL's default session settings.
    pub fn start(password: Option<&str>) -> FakePihole {
        Self::serve(FakeState {
            password: password.map(str::to_string),
            validity: Duration::from_secs(1800),
            max_sessions: 16,
            ..FakeState::default()
        })
    }

    /// [`FakePihole::start`] whose lists a real dnsmasq serves ([`FakePihole::dig`]).
    pub fn with_dnsmasq(password: Option<&str>) -> FakePihole {
        let fake = Self::start(password);
        fake.state().dns = Some(Dnsmasq::start());
        fake
    }

    fn serve(state: FakeState) -> FakePihole {
        let server = FakeServer::serve(state);
        FakePihole {
            url: server.url.to_string(),
            server,
        }
    }

    /// The fake's state, request log and faults, locked (a poisoned lock is taken anyway).
    pub fn state(&self) -> MutexGuard<'_, Locked<FakeState>> {
        self.server.lock()
    }

    /// Adds entries directly, as a user would in Pi-hole's web interface (`hosts` and `cnames` items).
    pub fn seed(&self, hosts: &[&str], cnames: &[&str]) {
        let mut s = self.state();
        s.hosts.extend(hosts.iter().map(|h| h.to_string()));
        s.cnames.extend(cnames.iter().map(|c| c.to_string()));
        if let Err(e) = s.publish() {
            panic!("dnsmasq refused the seeded lists: {e}");
        }
    }

    /// Both lists, `hosts: <item>` and `cname: <item>` lines, sorted.
    pub fn lines(&self) -> Vec<String> {
        let s = self.state();
        let mut v: Vec<String> = s.hosts.iter().map(|h| format!("hosts: {h}")).collect();
        v.extend(s.cnames.iter().map(|c| format!("cname: {c}")));
        v.sort();
        v
    }

    /// dnsmasq's answers to `name TYPE` (sorted, `dig +short` form); panics without dnsmasq.
    pub fn dig(&self, name: &str, rtype: &str) -> Vec<String> {
        let port = self.state().dns.as_ref().map(|d| d.port);
        match port {
            Some(port) => crate::dig::short(port, name, rtype),
            None => panic!("this fake has no dnsmasq: start it with FakePihole::with_dnsmasq"),
        }
    }
}

const TOOK: f64 = 0.003;

fn json_answer(status: StatusCode, body: Value) -> Response {
    (status, [("content-type", "application/json")], body.to_string()).into_response()
}

fn error(status: StatusCode, key: &str, message: &str, hint: Option<String>) -> Response {
    json_answer(
        status,
        json!({"error": {"key": key, "message": message, "hint": hint}, "took": TOOK}),
    )
}

fn session_answer(status: StatusCode, valid: bool, sid: Option<&Session>, validity: i64, message: &str) -> Response {
    json_answer(
        status,
        json!({"session": {
            "valid": valid, "totp": false, "sid": sid.map(|s| s.sid.clone()),
            "csrf": sid.map(|s| format!("csrf-{}", s.sid)), "validity": validity, "message": message,
        }, "took": TOOK}),
    )
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "not_found", "Not found", None)
}

/// The session id a request carries, as FTL looks for it: `sid` or `X-FTL-SID` header, `sid` query.
fn sid_of(headers: &HeaderMap, query: &Option<String>) -> Option<String> {
    let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::to_string);
    header("sid").or_else(|| header("x-ftl-sid")).or_else(|| {
        query
            .as_deref()?
            .split('&')
            .find_map(|kv| kv.strip_prefix("sid=").map(str::to_string))
    })
}

/// Why a request is not authenticated (`None`: it is, and its session was extended), as FTL's messages.
fn authenticate(s: &mut FakeState, sid: Option<&str>) -> Option<&'static str> {
    s.password.as_ref()?;
    let Some(sid) = sid else {
        return Some("no SID provided");
    };
    let now = Instant::now();
    let validity = s.validity;
    match s.sessions.iter_mut().find(|x| x.sid == sid) {
        Some(x) if x.valid_until > now => {
            x.valid_until = now + validity;
            None
        }
        Some(_) => Some("session expired"),
        None => Some("session unknown"),
    }
}

/// The check of every call but the login: the session.
fn authorize(s: &mut FakeState, headers: &HeaderMap, query: &Option<String>) -> Option<Response> {
    let sid = sid_of(headers, query);
    authenticate(s, sid.as_deref()).map(|_| {
        s.unauthorized += 1;
        error(StatusCode::UNAUTHORIZED, "unauthorized", "Unauthorized", None)
    })
}

async fn auth_post(State(state): State<Shared>, body: Bytes) -> Response {
    let mut s = fake::lock(&state);
    let Ok(payload) = serde_json::from_slice::<Value>(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "No valid JSON payload found",
            None,
        );
    };
    let password = match payload.get("password") {
        None => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "No password found in JSON payload",
                None,
            );
        }
        Some(Value::String(p)) => p.clone(),
        Some(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "Field password has to be of type 'string'",
                None,
            );
        }
    };
    let Some(expected) = s.password.clone() else {
        return session_answer(StatusCode::OK, true, None, -1, "no password set");
    };
    if password != expected {
        s.refused_logins += 1;
        return session_answer(StatusCode::UNAUTHORIZED, false, None, -1, "password incorrect");
    }
    let now = Instant::now();
    s.sessions.retain(|x| x.valid_until > now);
    if s.sessions.len() >= s.max_sessions {
        return error(
            StatusCode::TOO_MANY_REQUESTS,
            "api_seats_exceeded",
            "API seats exceeded",
            Some("increase webserver.api.max_sessions".into()),
        );
    }
    s.counter += 1;
    let mut h = RandomState::new().build_hasher();
    h.write_u64(s.counter);
    let mut raw = h.finish().to_be_bytes().to_vec();
    raw.extend_from_slice(&s.counter.to_be_bytes());
    let session = Session {
        sid: base64::engine::general_purpose::STANDARD.encode(raw),
        valid_until: now + s.validity,
    };
    s.sessions.push(session.clone());
    s.logins += 1;
    let validity = s.validity.as_secs() as i64;
    session_answer(StatusCode::OK, true, Some(&session), validity, "password correct")
}

async fn auth_get(State(state): State<Shared>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let mut s = fake::lock(&state);
    if s.password.is_none() {
        return session_answer(StatusCode::OK, true, None, -1, "no password set");
    }
    let sid = sid_of(&headers, &query);
    match authenticate(&mut s, sid.as_deref()) {
        Some(why) => session_answer(StatusCode::UNAUTHORIZED, false, None, -1, why),
        None => {
            let found = s.sessions.iter().find(|x| Some(&x.sid) == sid.as_ref()).cloned();
            let validity = s.validity.as_secs() as i64;
            session_answer(StatusCode::OK, true, found.as_ref(), validity, "correct password")
        }
    }
}

async fn auth_delete(State(state): State<Shared>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let mut s = fake::lock(&state);
    let sid = sid_of(&headers, &query);
    match authenticate(&mut s, sid.as_deref()) {
        Some(why) => session_answer(StatusCode::UNAUTHORIZED, false, None, -1, why),
        None => {
            let before = s.sessions.len();
            s.sessions.retain(|x| Some(&x.sid) != sid.as_ref());
            if s.sessions.len() < before {
                StatusCode::NO_CONTENT.into_response()
            } else {
                json_answer(StatusCode::NOT_FOUND, json!({"took": TOOK}))
            }
        }
    }
}

async fn list_get(
    State(state): State<Shared>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    Path(list): Path<String>,
) -> Response {
    let mut s = fake::lock(&state);
    if let Some(r) = authorize(&mut s, &headers, &query) {
        return r;
    }
    match s.list(&list) {
        Some(items) => json_answer(
            StatusCode::OK,
            json!({"config": {"dns": {list: items.clone()}}, "took": TOOK}),
        ),
        None => error(StatusCode::NOT_FOUND, "not_found", "Not found", None),
    }
}

/// FTL's validator of a whole list, with the item about to be added: the first entry it refuses, named
/// by its index as FTL names it.
fn validate(list: &str, items: &[String]) -> Result<(), String> {
    for (i, item) in items.iter().enumerate() {
        if list == "hosts" {
            validate_host(i, item)?;
        } else {
            let fields: Vec<&str> = item.split(',').collect();
            if let Some(j) = fields.iter().position(|f| f.is_empty()) {
                return Err(format!(
                    "dns.cnameRecords[{i}]: contains an empty string at position {j}"
                ));
            }
            if fields.len() < 2 {
                return Err(format!(
                    "dns.cnameRecords[{i}]: not a valid CNAME definition (too few elements)"
                ));
            }
        }
    }
    Ok(())
}

fn validate_host(i: usize, item: &str) -> Result<(), String> {
    let mut fields = item.split([' ', '\t']).filter(|f| !f.is_empty());
    let Some(ip) = fields.next() else {
        return Err(format!("dns.hosts[{i}]: found no first element (\"{item}\")"));
    };
    if ip.parse::<std::net::IpAddr>().is_err() {
        return Err(format!(
            "dns.hosts[{i}]: neither a valid IPv4 nor IPv6 address (\"{ip}\")"
        ));
    }
    let mut hosts = 0;
    for host in fields.take_while(|h| !h.starts_with('#')) {
        if !valid_domain(host) {
            return Err(format!("dns.hosts[{i}]: invalid hostname (\"{host}\")"));
        }
        hosts += 1;
    }
    if hosts == 0 {
        return Err(format!(
            "dns.hosts[{i}]: entry does not have at least one hostname (\"{item}\")"
        ));
    }
    Ok(())
}

/// FTL's `valid_domain`: `[a-zA-Z0-9._-]`, no empty label, labels of at most 63, no hyphen at the ends of
/// the last label.
fn valid_domain(d: &str) -> bool {
    if d.is_empty() || d.len() > 255 {
        return false;
    }
    if !d
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
    {
        return false;
    }
    let labels: Vec<&str> = d.split('.').collect();
    // A trailing dot leaves an empty last label, which FTL accepts; an empty label elsewhere it does not.
    let inner = &labels[..labels.len() - 1];
    if inner.iter().any(|l| l.is_empty() || l.len() > 63) {
        return false;
    }
    let tld = labels.last().copied().unwrap_or_default();
    !(tld.starts_with('-') || d.ends_with('-'))
}

/// dnsmasq's own refusal of a CNAME list: a name defined twice (dnsmasq: "duplicate CNAME").
fn duplicate_cname(items: &[String]) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    for (line, item) in items.iter().enumerate() {
        for name in item_names("cnameRecords", item) {
            if !seen.insert(name.to_ascii_lowercase()) {
                return Some(format!(
                    "dnsmasq: duplicate CNAME at line {} of /etc/pihole/dnsmasq.conf",
                    line + 1
                ));
            }
        }
    }
    None
}

/// The locked state and a copy of the list an item call names, once the session is checked; the answer
/// when it is not, or when there is no such list.
fn open_list<'a>(
    state: &'a Shared,
    headers: &HeaderMap,
    query: &Option<String>,
    list: &str,
) -> Result<(MutexGuard<'a, Locked<FakeState>>, Vec<String>), Response> {
    let mut s = fake::lock(state);
    if let Some(r) = authorize(&mut s, headers, query) {
        return Err(r);
    }
    let items = s
        .list(list)
        .map(|items| items.clone())
        .ok_or_else(|| json_answer(StatusCode::NOT_FOUND, json!({"took": TOOK})))?;
    Ok((s, items))
}

/// The record names an item defines: a hosts line's names, a CNAME line's aliases (not its target).
fn item_names<'a>(list: &str, item: &'a str) -> Vec<&'a str> {
    if list == "hosts" {
        let fields = item.split([' ', '\t']).filter(|f| !f.is_empty());
        return fields.skip(1).take_while(|f| !f.starts_with('#')).collect();
    }
    let mut fields: Vec<&str> = item.split(',').collect();
    let aliases = match fields.last().map(|f| f.parse::<u32>().is_ok()) {
        Some(true) if fields.len() >= 3 => fields.len() - 2,
        _ => fields.len().saturating_sub(1),
    };
    fields.truncate(aliases);
    fields
}

/// `PUT` (add) or `DELETE` (remove) one item of a list: both open the list, with its authentication, alike.
async fn item(
    method: Method,
    State(state): State<Shared>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    Path((list, item)): Path<(String, String)>,
) -> Response {
    let (mut s, items) = match open_list(&state, &headers, &query, &list) {
        Ok(open) => open,
        Err(r) => return r,
    };
    if method == Method::DELETE {
        item_delete(&mut s, items, &list, &item)
    } else {
        item_put(&mut s, items, &list, item)
    }
}

/// Adds `item` to `list` (holding `items`), refused as Pi-hole refuses it.
fn item_put(s: &mut Locked<FakeState>, items: Vec<String>, list: &str, item: String) -> Response {
    if items.contains(&item) {
        return error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "Item already present",
            Some("Uniqueness of items is enforced".into()),
        );
    }
    if let Some(name) = item_names(list, &item).into_iter().find(|n| s.faults.refuses(n)) {
        let hint = format!("dns.{list}[{}]: invalid hostname (\"{name}\")", items.len());
        return error(StatusCode::BAD_REQUEST, "bad_request", "Invalid value", Some(hint));
    }
    let mut next = items;
    next.push(item);
    if let Err(hint) = validate(list, &next) {
        return error(StatusCode::BAD_REQUEST, "bad_request", "Invalid value", Some(hint));
    }
    if list == "cnameRecords" {
        let refused = duplicate_cname(&next).map(Err).unwrap_or_else(|| match &s.dns {
            Some(d) => d.check(&next),
            None => Ok(()),
        });
        if let Err(hint) = refused {
            return error(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "Invalid configuration",
                Some(hint),
            );
        }
    }
    commit(s, list, next, StatusCode::CREATED)
}

/// Removes `item` from `list` (holding `next`); a 404 when it is not there.
fn item_delete(s: &mut Locked<FakeState>, mut next: Vec<String>, list: &str, item: &str) -> Response {
    let Some(at) = next.iter().position(|i| *i == item) else {
        return json_answer(StatusCode::NOT_FOUND, json!({"took": TOOK}));
    };
    next.remove(at);
    commit(s, list, next, StatusCode::NO_CONTENT)
}

/// Installs a list and has dnsmasq serve it; dnsmasq refusing it is a 400, the list unchanged.
fn commit(s: &mut Locked<FakeState>, list: &str, next: Vec<String>, status: StatusCode) -> Response {
    let Some(items) = s.list(list) else {
        return json_answer(StatusCode::NOT_FOUND, json!({"took": TOOK}));
    };
    let previous = std::mem::replace(items, next);
    if let Err(e) = s.publish() {
        if let Some(items) = s.list(list) {
            *items = previous;
        }
        let _ = s.publish();
        return error(StatusCode::BAD_REQUEST, "bad_request", "Invalid configuration", Some(e));
    }
    if status == StatusCode::NO_CONTENT {
        return status.into_response();
    }
    json_answer(status, json!({"took": TOOK}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_validated_as_ftl_does() {
        assert_eq!(validate("hosts", &["192.0.2.1 web.example.org".into()]), Ok(()));
        assert_eq!(
            validate("hosts", &["192.0.2.1\tweb.example.org  www # x".into()]),
            Ok(())
        );
        assert_eq!(
            validate(
                "hosts",
                &["192.0.2.1 a.example.org".into(), "192.0.2.1 *.example.org".into()]
            ),
            Err("dns.hosts[1]: invalid hostname (\"*.example.org\")".into())
        );
        assert!(validate("hosts", &["web.example.org 192.0.2.1".into()]).is_err());
        assert!(validate("hosts", &["192.0.2.1".into()]).is_err());
        assert!(!valid_domain("a..b") && !valid_domain("a.b-") && valid_domain("_srv.example.org"));
    }

    #[test]
    fn cname_lists_are_validated_and_duplicates_refused() {
        assert_eq!(
            validate("cnameRecords", &["a.example.org,b.example.org,300".into()]),
            Ok(())
        );
        assert!(validate("cnameRecords", &["a.example.org".into()]).is_err());
        assert!(validate("cnameRecords", &["a.example.org,,b".into()]).is_err());
        let twice = [
            "a.example.org,b.example.org".to_string(),
            "A.example.org,c.example.org,60".to_string(),
        ];
        assert!(duplicate_cname(&twice).is_some_and(|e| e.contains("line 2")));
        assert_eq!(duplicate_cname(&twice[..1]), None);
    }
}
