//! A stateful fake of the part of Google Cloud that extdns's and external-dns's Google providers use,
//! written from Google's published references (Cloud DNS v1: managedZones.list, resourceRecordSets.list,
//! changes.create, changes.get; OAuth 2.0 for service accounts, RFC 7523; the metadata server; STS token
//! exchange and IAM credentials' generateAccessToken), on one port:
//!
//! - `/dns/v1/...`: zones and rrsets paged with `maxResults`/`pageToken` (at most [`FakeState::page_limit`]
//!   a page); a change applied atomically or not at all, refused exactly as Cloud DNS documents (409
//!   `alreadyExists`, 412 `conditionNotMet`, 404 `notFound`, 403 `quotaExceeded` past the additions,
//!   deletions or record data a change may hold, 400 `invalid`: a type Cloud DNS does not hold, data not in
//!   its type's format, TLSA, SVCB and HTTPS included), in Google's error envelope; a change is
//!   `pending` for [`FakeState::pending_polls`] `changes.get` calls, then `done`.
//! - `/token`: the JWT-bearer grant, the signed JWT checked against the test key (`kid`, `iss`, `aud`,
//!   `scope`, `iat`/`exp`, RS256 signature), and the refresh-token grant.
//! - `/computeMetadata/v1/...`: the metadata server's token and project id, only with
//!   `Metadata-Flavor: Google`.
//! - `/sts/v1/token` and `/iam/v1/projects/-/serviceAccounts/{email}:generateAccessToken`: Workload
//!   Identity Federation.
//!
//! Every Cloud DNS call needs a token the fake issued. On the [`crate::fake`] skeleton, whose faults reach
//! Cloud DNS only (never the token endpoints): throttled as Cloud DNS throttles (429 `rateLimitExceeded`)
//! past its per-project limit ([`RATE_LIMIT`]), a
//! change touching a refused record name refused whole (400 `invalid`, naming the entry).

// A handler's refusal is its answer: helpers return it as the `Err` they are checked with.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path as FsPath, PathBuf};
use std::sync::MutexGuard;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use crate::fake::{self, Api, FakeServer, Locked, Purpose, RateLimit};

/// Cloud DNS's API requests per project: its quota page
/// (<https://cloud.google.com/dns/quotas>) names the per-minute read and write quotas of a project's
/// principals but no figure (each project's console shows its own), so the fake meters the 600 a minute
/// extdns assumes (`extdns_provider_google::API_LIMIT`) as a one-minute window counting every call, as
/// Google's quotas count requests; a test lowers it with [`crate::fake::Faults::limit`].
pub const RATE_LIMIT: RateLimit = RateLimit::window(600, Duration::from_secs(60));

/// The project the fake serves.
pub const PROJECT: &str = "extdns-test";
/// The test service account.
pub const CLIENT_EMAIL: &str = "external-dns@extdns-test.iam.gserviceaccount.com";
/// The id of the test key (the JWT's `kid`).
pub const KEY_ID: &str = "0123456789abcdef0123456789abcdef01234567";
/// The scope every token must be asked for.
pub const SCOPE: &str = "https://www.googleapis.com/auth/ndev.clouddns.readwrite";
/// Google's token endpoint, which a key file names when its client reaches the fake through
/// [`crate::tls_proxy`].
pub const GOOGLE_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// The host names Google's clients call, for [`crate::tls_proxy::TlsProxy::start`].
pub const GOOGLE_HOSTS: [&str; 2] = ["dns.googleapis.com", "oauth2.googleapis.com"];
/// The refresh token of the test `authorized_user`.
pub const REFRESH_TOKEN: &str = "1//test-refresh-token";
/// The OAuth client of the test `authorized_user`.
pub const CLIENT_ID: &str = "764086051850-test.apps.googleusercontent.com";
/// Its secret.
pub const CLIENT_SECRET: &str = "test-client-secret";
/// The workload identity pool provider STS accepts tokens for.
pub const AUDIENCE: &str =
    "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/pool/providers/kube";
/// The subject token STS accepts (a Kubernetes ServiceAccount token, say).
pub const SUBJECT_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.test-subject.sig";

/// The test service account's key (RSA 2048, PKCS#8), made for these tests only and trusted by nothing else.
pub const PRIVATE_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDwPn20QsJ3HNtR
knvDpWfndGbCE69v9ZrZgZZHUwige5A8z0/HauhMQrs+IDCeus2sncPDoYAsZceS
ywyoPmrnTxtKANZ8m9WJzhIkmxIm1F0L31TAGUM20BZOnjxY5eRYcWihEpNqkXwS
Rr2py/7wRZrgRwp0Ym4BO1wpyr69wQKE2Hoos4FOke17KnF0ZshZHus3qF2lT/cq
62XVf8XsHbs1GEqLqEWoYJgdzjUwyBhAtPoVlXAfl3tgRLkt9CKBnJztBc55t6oC
JZwEDe5xSjX0WJpxbUJKe13uT2iPLN/9kApHuU3quu4S0OpXETmBfhIvj2e5pxVI
8SbLgzZZAgMBAAECggEAVH2dxu4tpydyaINMXJfI7Ykt9HZo3kax0Wn2OJpWr94U
8ZX1WExcaymS4Xv/rWtEFz+a0Cv1wGeBIzqe9nKRNU1IayPVSxihJmhfUBlrblWE
bb769t5LmbTgC4Ex9w/O2V31LqSyTKniySiw3kz8mXLZT6QcZKcTSgKe3KHNqDzR
FxKB9I5M59b8QwpKo1t2zVrxODVQtQAX79l2kwO1suVr1Zenr67sYWx5LXcovwkt
oGdDrqXCWk49HuIu6wIRDskoko2CUv9SX03evGE3n+yeKlHpamF9E0KQFxfQb3z6
LwjuoPuvxZFvCkO0BfqeHHrmHAddIKleQz7d1zP6kwKBgQD8k7LXTNe6ljK+5UJk
Oda8dy6JF3eV038rza2if60t0m3lWktc/nLelSmzGVnBR4Eq7f6M2EUF/GJuRWQQ
SLvL61K+DOyyfRzLFL7Rxd7xypl2Zxo9d5DlZ5NBrd5gyvRdpO+wegWodnQdz4Nn
17PSbaNmnjOg8QFMqelhrpYUgwKBgQDzgAEcRkFbGlCNi3Fr1i6Rym2kTiJjBRq9
cqEBSliPG6gyXWcGBxcXRG5lLSWyNr/TOIBS0SB84qyp1xrRenFmWBCN76y9U7+8
hww2PTqWkKPrLNsohRgE42Y/srHjsW8nXOr+YIhv687Z3NrCj41AKymBu+pSefXC
tJlGxRrq8wKBgQCxVwbn8nU59gGVVSUjeBTU6R2MdiSp1wDggZ5bjSfMF4a/1YE6
vxFqRPMtZCxH7+u6d7YVsDfudwGpiSEz6c2p5QWImUyMGhpgYKWGZlceD/FmWAft
hoj++ZVENU8BSR8ArTD6CQL2AI2Q7MXH4ITKx95Fy+hWJUGTUW2i/1Ey/wKBgA+q
FGg1PM8XikcQyWMejDBkzVjcjenA0k+NqD3lAn1yUgerao1At4OPq2pm1R35161G
3Tp2qZhfHKxwYhFHxzPGRopa+MnVMWh3Z5m1pqc49tKSOCcLKNhnqJRAcqErMPNf
Tt6+ZwiMKuppAsmxYmzWWf02kYRsxBqac6HR3EFxAoGBAN+l5VYyv2jcZgmFnx5e
f4Wh9xUZKbZ5WHPKU/lEdI1zMP4ZA+4PoBsIsAw7FehZfcvobA3tfG8wMtZIsmfz
7VGXzaAo+qy+TZaGHFAzny5/iVSxmkjJH5Y+ez9XDourO783HOxAvcsPiOIwRfv1
iwDjdsL+FQwEDFLXDzUcLlgP
-----END PRIVATE KEY-----
";

/// One rrset as the fake stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rrset {
    /// TTL in seconds.
    pub ttl: i64,
    /// Record data as written.
    pub rrdatas: Vec<String>,
}

/// A managed zone.
#[derive(Debug, Clone)]
pub struct FakeZone {
    /// Resource name (`example-org`).
    pub name: String,
    /// DNS name with the trailing dot.
    pub dns_name: String,
    /// Numeric id.
    pub id: String,
    /// `public` or `private`.
    pub visibility: String,
    /// A peering zone (extdns must leave it alone).
    pub peering: bool,
}

/// Cloud DNS's quotas on one change, which `changes.create` checks before applying anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeLimits {
    /// Additions a change may hold (Cloud DNS: 1,000).
    pub additions: usize,
    /// Deletions a change may hold (Cloud DNS: 1,000).
    pub deletions: usize,
    /// Bytes of record data a change may hold (Cloud DNS: 100,000).
    pub bytes: usize,
}

impl Default for ChangeLimits {
    /// Cloud DNS's own quotas.
    fn default() -> ChangeLimits {
        ChangeLimits {
            additions: 1000,
            deletions: 1000,
            bytes: 100_000,
        }
    }
}

/// Everything the fake holds and counts; inspect it through [`FakeGoogle::state`].
#[derive(Debug)]
pub struct FakeState {
    /// The zones.
    pub zones: Vec<FakeZone>,
    /// Rrsets by (zone name, rrset name, type).
    pub rrsets: BTreeMap<(String, String, String), Rrset>,
    changes: HashMap<String, (String, Value, u32)>,
    next_change: u64,
    tokens: BTreeSet<String>,
    next_token: u64,
    /// Answer `changes.get` with `pending` this many times per change before `done`.
    pub pending_polls: u32,
    /// At most this many entries a list page holds.
    pub page_limit: usize,
    /// What one change may hold: past it, `changes.create` answers `quotaExceeded`.
    pub change_limits: ChangeLimits,
    /// `expires_in` of the tokens the fake issues.
    pub token_lifetime: u64,
    /// Changes applied.
    pub changes_applied: usize,
    /// Token grants issued, by kind (`jwt`, `refresh`, `metadata`, `sts`, `impersonation`).
    pub grants: Vec<String>,
    /// Every refusal sent, as `status reason`.
    pub refusals: Vec<String>,
}

impl Api for FakeState {
    fn routes(url: &str) -> Router<Shared> {
        Router::new()
            .route("/dns/v1/projects/{project}/managedZones", get(list_zones))
            .route(
                "/dns/v1/projects/{project}/managedZones/{zone}/rrsets",
                get(list_rrsets),
            )
            .route(
                "/dns/v1/projects/{project}/managedZones/{zone}/changes",
                post(create_change),
            )
            .route(
                "/dns/v1/projects/{project}/managedZones/{zone}/changes/{id}",
                get(get_change),
            )
            .route("/token", post(token))
            .route("/sts/v1/token", post(sts))
            .route("/iam/v1/projects/-/serviceAccounts/{call}", post(impersonate))
            .route(
                "/computeMetadata/v1/instance/service-accounts/default/token",
                get(metadata_token),
            )
            .route("/computeMetadata/v1/project/project-id", get(metadata_project))
            .layer(Extension(OwnUrl(url.to_string())))
    }

    fn purpose(method: &Method, uri: &Uri, _: &HeaderMap) -> Purpose {
        let path = uri.path();
        if !path.starts_with("/dns/v1/") {
            // The endpoints beside Cloud DNS by their path; anything else is the token endpoint.
            let beside = [
                ("/computeMetadata/", "metadata"),
                ("/sts/", "sts"),
                ("/iam/", "generateAccessToken"),
            ];
            let name = beside.iter().find(|(prefix, _)| path.starts_with(prefix));
            return Purpose::beside(name.map_or("token", |&(_, name)| name));
        }
        let segments: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        match (segments.get(6).copied(), segments.len()) {
            (None, 5) => Purpose::read("managedZones.list"),
            (Some("rrsets"), _) => Purpose::read("resourceRecordSets.list"),
            (Some("changes"), 7) if method == Method::POST => Purpose::write("changes.create"),
            (Some("changes"), 8) => Purpose::read("changes.get"),
            _ => Purpose::read("other"),
        }
    }

    const CLOUD: Option<&'static str> = Some("GOOGLE");

    fn limits() -> Vec<RateLimit> {
        vec![RATE_LIMIT]
    }

    /// Cloud DNS counts per project: the path's `/dns/v1/projects/{project}/`.
    fn account(_: &Method, uri: &Uri, _: &HeaderMap) -> String {
        let segments: Vec<&str> = uri.path().split('/').filter(|p| !p.is_empty()).collect();
        match segments.as_slice() {
            ["dns", "v1", "projects", project, ..] => project.to_string(),
            _ => String::new(),
        }
    }

    fn throttled(_: Duration) -> Response {
        error(
            429,
            "rateLimitExceeded",
            "Rate limit exceeded for quota metric 'Read requests'",
        )
    }

    fn unavailable(status: StatusCode) -> Response {
        error(status.as_u16(), "backendError", "Backend Error")
    }
}

type Shared = fake::Shared<FakeState>;

/// The fake's own URL, for the token endpoint to recognise the audience of a key file that names it.
#[derive(Clone)]
struct OwnUrl(String);

/// A running fake on 127.0.0.1; stops when dropped.
pub struct FakeGoogle {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// `127.0.0.1:<port>`, for `GCE_METADATA_HOST`.
    pub host: String,
    server: FakeServer<FakeState>,
}

impl FakeGoogle {
    /// A fake with these public zones (`(resource name, DNS name)`, the DNS name without the dot).
    pub fn start(zones: &[(&str, &str)]) -> FakeGoogle {
        let zones = zones
            .iter()
            .enumerate()
            .map(|(i, (name, dns))| FakeZone {
                name: name.to_string(),
                dns_name: format!("{}.", dns.trim_end_matches('.')),
                id: format!("{}", 4_000_000_000_000_000_000u64 + i as u64 * 7919),
                visibility: "public".into(),
                peering: false,
            })
            .collect();
        Self::with_zones(zones)
    }

    /// A fake with these zones, each given its SOA and NS rrsets as Cloud DNS creates them.
    pub fn with_zones(zones: Vec<FakeZone>) -> FakeGoogle {
        let mut rrsets = BTreeMap::new();
        for z in &zones {
            let key = |t: &str| (z.name.clone(), z.dns_name.clone(), t.to_string());
            rrsets.insert(
                key("SOA"),
                Rrset {
                    ttl: 21600,
                    rrdatas: vec![
                        "ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"
                            .into(),
                    ],
                },
            );
            rrsets.insert(
                key("NS"),
                Rrset {
                    ttl: 21600,
                    rrdatas: (1..=4).map(|i| format!("ns-cloud-a{i}.googledomains.com.")).collect(),
                },
            );
        }
        let state = FakeState {
            zones,
            rrsets,
            changes: HashMap::new(),
            next_change: 0,
            tokens: BTreeSet::new(),
            next_token: 0,
            pending_polls: 1,
            page_limit: 50,
            change_limits: ChangeLimits::default(),
            token_lifetime: 3600,
            changes_applied: 0,
            grants: Vec::new(),
            refusals: Vec::new(),
        };
        let server = FakeServer::serve(state);
        FakeGoogle {
            host: server.addr().to_string(),
            url: server.url.to_string(),
            server,
        }
    }

    /// Cloud DNS's base URL on the fake.
    pub fn dns_url(&self) -> String {
        format!("{}/dns/v1", self.url)
    }

    /// The fake's state, request log and faults, locked.
    pub fn state(&self) -> MutexGuard<'_, Locked<FakeState>> {
        self.server.lock()
    }

    /// A token the fake accepts, without any grant (for tests of the API alone).
    pub fn issue_token(&self) -> String {
        issue(&mut self.state(), "direct")
    }

    /// Add an rrset directly (someone else's, made in the console).
    pub fn seed(&self, zone: &str, name: &str, rtype: &str, ttl: i64, rrdatas: &[&str]) {
        self.state().rrsets.insert(
            (zone.to_string(), name.to_string(), rtype.to_string()),
            Rrset {
                ttl,
                rrdatas: rrdatas.iter().map(|s| s.to_string()).collect(),
            },
        );
    }

    /// Every rrset but SOA and NS as `name type ttl data...`, sorted.
    pub fn lines(&self) -> Vec<String> {
        self.rrset_lines(false)
    }

    /// [`FakeGoogle::lines`] with the managed zone each rrset is in first (`zone name type ttl data...`), for
    /// tests where a record's zone matters (a delegated child zone's apex).
    pub fn zoned_lines(&self) -> Vec<String> {
        self.rrset_lines(true)
    }

    fn rrset_lines(&self, with_zone: bool) -> Vec<String> {
        let mut v: Vec<String> = self
            .state()
            .rrsets
            .iter()
            .filter(|((_, _, t), _)| t != "SOA" && t != "NS")
            .map(|((z, n, t), r)| {
                let line = format!("{n} {t} {} {}", r.ttl, r.rrdatas.join(" "));
                if with_zone { format!("{z} {line}") } else { line }
            })
            .collect();
        v.sort();
        v
    }

    /// Where the fake listens.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }

    /// A `service_account` key file for the test key, its `token_uri` the fake's.
    pub fn service_account_file(&self, dir: &FsPath) -> PathBuf {
        self.key_file(dir, "service-account.json", &format!("{}/token", self.url))
    }

    /// The same key file as Google hands it out (`token_uri` Google's), for a client that reaches the
    /// fake through [`crate::tls_proxy`].
    pub fn google_service_account_file(&self, dir: &FsPath) -> PathBuf {
        self.key_file(dir, "google-service-account.json", GOOGLE_TOKEN_URI)
    }

    fn key_file(&self, dir: &FsPath, name: &str, token_uri: &str) -> PathBuf {
        write(
            dir,
            name,
            json!({
                "type": "service_account", "project_id": PROJECT, "private_key_id": KEY_ID,
                "private_key": PRIVATE_KEY, "client_email": CLIENT_EMAIL, "client_id": "123456789",
                "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": token_uri,
                "universe_domain": "googleapis.com",
            }),
        )
    }

    /// An `authorized_user` file as `gcloud auth application-default login` writes it, its token URI the
    /// fake's (gcloud's has none: Google's default is used).
    pub fn authorized_user_file(&self, dir: &FsPath, name: &str) -> PathBuf {
        write(
            dir,
            name,
            json!({
                "type": "authorized_user", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                "refresh_token": REFRESH_TOKEN, "token_uri": format!("{}/token", self.url),
            }),
        )
    }

    /// An `external_account` file reading [`SUBJECT_TOKEN`] from a file beside it, impersonating the test
    /// service account when `impersonate`.
    pub fn external_account_file(&self, dir: &FsPath, impersonate: bool) -> PathBuf {
        let subject = dir.join("subject-token");
        std::fs::write(&subject, SUBJECT_TOKEN).unwrap_or_else(|e| panic!("writing {}: {e}", subject.display()));
        let mut v = json!({
            "type": "external_account", "audience": AUDIENCE,
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": format!("{}/sts/v1/token", self.url),
            "credential_source": {"file": subject},
        });
        if impersonate {
            v["service_account_impersonation_url"] = json!(format!(
                "{}/iam/v1/projects/-/serviceAccounts/{CLIENT_EMAIL}:generateAccessToken",
                self.url
            ));
        }
        write(dir, "external-account.json", v)
    }
}

fn write(dir: &FsPath, name: &str, v: Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, v.to_string()).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// A JSON answer.
fn reply(code: u16, v: Value) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST);
    (
        status,
        [("content-type", "application/json; charset=UTF-8")],
        v.to_string(),
    )
        .into_response()
}

fn status_name(code: u16) -> &'static str {
    match code {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ALREADY_EXISTS",
        412 => "FAILED_PRECONDITION",
        429 => "RESOURCE_EXHAUSTED",
        _ => "UNKNOWN",
    }
}

/// Google's error envelope.
fn error(code: u16, reason: &str, message: &str) -> Response {
    let status = if reason == "quotaExceeded" {
        "RESOURCE_EXHAUSTED"
    } else {
        status_name(code)
    };
    let body = json!({"error": {"code": code, "message": message,
        "errors": [{"domain": if code == 429 || reason == "quotaExceeded" { "usageLimits" } else { "global" }, "reason": reason, "message": message}],
        "status": status}});
    reply(code, body)
}

/// The checks every Cloud DNS call passes first, a token the fake issued and the project: the state locked
/// when they pass.
fn admit<'a>(
    state: &'a Shared,
    headers: &HeaderMap,
    project: &str,
) -> Result<MutexGuard<'a, Locked<FakeState>>, Response> {
    let s = fake::lock(state);
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if !bearer.is_some_and(|t| s.tokens.contains(t)) {
        return Err(error(
            401,
            "authError",
            "Request had invalid authentication credentials.",
        ));
    }
    if project != PROJECT {
        return Err(error(
            404,
            "notFound",
            &format!("The 'parameters.project' resource named '{project}' does not exist."),
        ));
    }
    Ok(s)
}

fn query(raw: &Option<String>) -> BTreeMap<String, String> {
    fake::query_pairs(raw.as_deref())
}

/// Which of `len` items one page holds (`maxResults`, at most the fake's page limit, from `pageToken`), and
/// the next page's token. Only the page's items are then turned into JSON: a paged read of a large zone costs
/// the fake time in proportion to the zone, not to its square.
fn page(
    len: usize,
    q: &BTreeMap<String, String>,
    limit: usize,
) -> Result<(std::ops::Range<usize>, Option<String>), Response> {
    let size = match q.get("maxResults") {
        Some(m) => match m.parse::<usize>() {
            Ok(n) if n > 0 => n.min(limit),
            _ => return Err(error(400, "invalid", &format!("Invalid value for 'maxResults': {m}"))),
        },
        None => limit,
    };
    let start = match q.get("pageToken") {
        Some(t) => match t.strip_prefix("page-").and_then(|n| n.parse::<usize>().ok()) {
            Some(n) if n <= len => n,
            _ => return Err(error(400, "invalid", &format!("Invalid value for 'pageToken': {t}"))),
        },
        None => 0,
    };
    let end = (start + size).min(len);
    let next = (end < len).then(|| format!("page-{end}"));
    Ok((start..end, next))
}

async fn list_zones(
    State(state): State<Shared>,
    Path(project): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Result<Response, Response> {
    let s = admit(&state, &headers, &project)?;
    let zones: Vec<Value> = s
        .zones
        .iter()
        .map(|z| {
            let mut v = json!({"kind": "dns#managedZone", "name": z.name, "dnsName": z.dns_name, "id": z.id,
                "visibility": z.visibility, "description": "", "creationTime": "2026-01-01T00:00:00.000Z",
                "nameServers": (1..=4).map(|i| format!("ns-cloud-a{i}.googledomains.com.")).collect::<Vec<_>>()});
            if z.peering {
                v["peeringConfig"] = json!({"kind": "dns#managedZonePeeringConfig", "targetNetwork": {"networkUrl": "https://www.googleapis.com/compute/v1/projects/p/global/networks/default"}});
            }
            v
        })
        .collect();
    let (range, next) = page(zones.len(), &query(&raw), s.page_limit)?;
    let mut v = json!({"kind": "dns#managedZonesListResponse", "managedZones": zones[range]});
    if let Some(n) = next {
        v["nextPageToken"] = json!(n);
    }
    Ok(reply(200, v))
}

fn zone_of<'a>(s: &'a FakeState, zone: &str) -> Option<&'a FakeZone> {
    s.zones.iter().find(|z| z.name == zone || z.id == zone)
}

async fn list_rrsets(
    State(state): State<Shared>,
    Path((project, zone)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Result<Response, Response> {
    let s = admit(&state, &headers, &project)?;
    let Some(z) = zone_of(&s, &zone).cloned() else {
        return Err(error(
            404,
            "notFound",
            &format!("The 'parameters.managedZone' resource named '{zone}' does not exist."),
        ));
    };
    let len = zone_sets(&s.rrsets, &z.name).count();
    let (range, next) = page(len, &query(&raw), s.page_limit)?;
    let items: Vec<Value> = zone_sets(&s.rrsets, &z.name)
        .skip(range.start)
        .take(range.len())
        .map(|((_, n, t), r)| json!({"kind": "dns#resourceRecordSet", "name": n, "type": t, "ttl": r.ttl, "rrdatas": r.rrdatas}))
        .collect();
    let mut v = json!({"kind": "dns#resourceRecordSetsListResponse", "rrsets": items});
    if let Some(n) = next {
        v["nextPageToken"] = json!(n);
    }
    Ok(reply(200, v))
}

type RrsetKey = (String, String, String);

/// The rrsets of one zone, in order, found through the map's order rather than by scanning every zone's.
fn zone_sets<'a>(
    sets: &'a BTreeMap<RrsetKey, Rrset>,
    zone: &'a str,
) -> impl Iterator<Item = (&'a RrsetKey, &'a Rrset)> + 'a {
    sets.range((zone.to_string(), String::new(), String::new())..)
        .take_while(move |((zn, _, _), _)| zn == zone)
}

/// The types of the rrsets named `name` in `zone`.
fn types_at<'a>(
    sets: &'a BTreeMap<RrsetKey, Rrset>,
    zone: &'a str,
    name: &'a str,
) -> impl Iterator<Item = &'a str> + 'a {
    sets.range((zone.to_string(), name.to_string(), String::new())..)
        .take_while(move |((zn, n, _), _)| zn == zone && n == name)
        .map(|((_, _, t), _)| t.as_str())
}

/// One rrset of a change body, checked as Cloud DNS checks it.
fn rrset_of(v: &Value, field: &str, i: usize, zone: &FakeZone) -> Result<(String, String, Rrset), Response> {
    let at = format!("entity.change.{field}[{i}]");
    let invalid = |what: &str| Err(error(400, "invalid", &format!("Invalid value for '{at}{what}'")));
    let (Some(name), Some(kind)) = (
        v.get("name").and_then(Value::as_str),
        v.get("type").and_then(Value::as_str),
    ) else {
        return Err(error(
            400,
            "required",
            &format!("Required field '{at}.name' or '{at}.type' not specified"),
        ));
    };
    if !name.ends_with('.')
        || !(name.to_ascii_lowercase() == zone.dns_name
            || name.to_ascii_lowercase().ends_with(&format!(".{}", zone.dns_name)))
    {
        return invalid(&format!(".name': '{name}' is not in zone '{}'", zone.dns_name));
    }
    let ttl = match v.get("ttl") {
        None => 0,
        Some(t) => match t.as_i64() {
            Some(t) if t >= 0 => t,
            _ => return invalid(".ttl"),
        },
    };
    let rrdatas: Vec<String> = match v.get("rrdatas").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => {
            let mut out = Vec::new();
            for d in a {
                match d.as_str() {
                    Some(d) => out.push(d.to_string()),
                    None => return invalid(".rrdata"),
                }
            }
            out
        }
        _ => {
            return Err(error(
                400,
                "required",
                &format!("Required field '{at}.rrdata' not specified"),
            ));
        }
    };
    let ok = match kind {
        "A" => rrdatas.iter().all(|d| d.parse::<Ipv4Addr>().is_ok()),
        "AAAA" => rrdatas.iter().all(|d| d.parse::<Ipv6Addr>().is_ok()),
        "CNAME" => rrdatas.len() == 1 && rrdatas[0].ends_with('.'),
        "MX" => rrdatas.iter().all(|d| {
            d.split_once(' ')
                .is_some_and(|(p, h)| p.parse::<u16>().is_ok() && h.ends_with('.'))
        }),
        "NS" | "PTR" | "DNAME" => rrdatas.iter().all(|d| d.ends_with('.')),
        "SRV" => rrdatas.iter().all(|d| d.split(' ').count() == 4 && d.ends_with('.')),
        "TXT" => rrdatas.iter().all(|d| txt_strings_fit(d)),
        "TLSA" => rrdatas.iter().all(|d| crate::rdata::tlsa(d).is_ok()),
        "HTTPS" | "SVCB" => rrdatas.iter().all(|d| svcb_ok(d)),
        "NAPTR" | "CAA" | "SOA" => true,
        _ => false,
    };
    if !ok {
        return invalid(&format!(".rrdata': {kind} {}", rrdatas.join(" ")));
    }
    Ok((name.to_ascii_lowercase(), kind.to_string(), Rrset { ttl, rrdatas }))
}

/// Cloud DNS's rule for SVCB and HTTPS data: presentation format (RFC 9460; Cloud DNS lists both types in
/// "Supported DNS record types", cloud.google.com/dns/docs/records-overview, and takes rrdatas as zone-file
/// text), the target name absolute (`.` or ending in a dot) as every name in Cloud DNS record data is (its
/// CNAME, MX, NS and SRV rules here).
fn svcb_ok(rrdata: &str) -> bool {
    crate::rdata::svcb(rrdata).is_ok_and(|s| s.target.ends_with('.'))
}

/// Cloud DNS's rule for TXT data: each character-string of an rrdata at most 255 octets, the limit of
/// RFC 1035 section 3.3.14 (a one-octet length). Cloud DNS refuses a longer string as invalid record data
/// and stores unquoted words as separate strings (Mailhardener, "How to enter TXT values in Google Cloud
/// DNS", https://mailhardener.com/blog/how-to-enter-txt-values-in-google-cloud-dns, citing Google's issue
/// tracker; Google's own "Records format (JSON)" page shows TXT rrdatas as zone-file text). An rrdata is
/// read as zone-file text: quoted strings (`\` escapes one character), or words separated by spaces.
fn txt_strings_fit(rrdata: &str) -> bool {
    const MOST: usize = 255;
    let mut chars = rrdata.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_ascii_whitespace()).is_some() {}
        let Some(first) = chars.next() else {
            return true;
        };
        let mut octets = 0;
        if first == '"' {
            loop {
                match chars.next() {
                    None => return false,
                    Some('"') => break,
                    Some('\\') => octets += chars.next().map_or(0, char::len_utf8),
                    Some(c) => octets += c.len_utf8(),
                }
            }
        } else {
            octets += first.len_utf8();
            while let Some(c) = chars.next_if(|c| !c.is_ascii_whitespace()) {
                octets += c.len_utf8();
            }
        }
        if octets > MOST {
            return false;
        }
    }
}

fn same_data(a: &Rrset, b: &Rrset) -> bool {
    let (mut x, mut y) = (a.rrdatas.clone(), b.rrdatas.clone());
    x.sort();
    y.sort();
    a.ttl == b.ttl && x == y
}

/// A change entry whose name a test refused ([`fake::Faults::refuse`]) is refused as an invalid name is.
fn refused(
    faults: &fake::Faults,
    entry: Result<(String, String, Rrset), Response>,
    field: &str,
    i: usize,
) -> Result<(String, String, Rrset), Response> {
    let (name, kind, set) = entry?;
    if faults.refuses(&name) {
        return Err(error(
            400,
            "invalid",
            &format!("Invalid value for 'entity.change.{field}[{i}].name': '{name}'"),
        ));
    }
    Ok((name, kind, set))
}

fn refuse(s: &mut FakeState, code: u16, reason: &str, message: &str) -> Response {
    s.refusals.push(format!("{code} {reason}"));
    error(code, reason, message)
}

async fn create_change(
    State(state): State<Shared>,
    Path((project, zone)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
    let mut locked = admit(&state, &headers, &project)?;
    let Locked { api: s, faults, .. } = &mut *locked;
    let Some(z) = zone_of(s, &zone).cloned() else {
        return Err(refuse(
            s,
            404,
            "notFound",
            &format!("The 'parameters.managedZone' resource named '{zone}' does not exist."),
        ));
    };
    let Ok(change) = serde_json::from_slice::<Value>(&body) else {
        return Err(refuse(s, 400, "parseError", "Parse Error"));
    };
    let list = |field: &str| change.get(field).and_then(Value::as_array).cloned().unwrap_or_default();
    let (additions, deletions) = (list("additions"), list("deletions"));
    if additions.is_empty() && deletions.is_empty() {
        return Err(refuse(
            s,
            400,
            "required",
            "Required field 'entity.change' not specified",
        ));
    }
    let bytes: usize = additions
        .iter()
        .chain(&deletions)
        .filter_map(|r| r.get("rrdatas").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(str::len)
        .sum();
    for (n, max, what) in [
        (additions.len(), s.change_limits.additions, "additions per change"),
        (deletions.len(), s.change_limits.deletions, "deletions per change"),
        (bytes, s.change_limits.bytes, "total rrdata size per change"),
    ] {
        if n > max {
            return Err(refuse(
                s,
                403,
                "quotaExceeded",
                &format!("The change would exceed quota for {what}."),
            ));
        }
    }
    // Checked against the zone as it would be after the change's earlier entries (those entries kept
    // aside, not applied), then applied only when every deletion and addition passes: a change is atomic.
    // Nothing copies the zone, so a change costs the fake time in proportion to the change.
    let mut removed: BTreeSet<RrsetKey> = BTreeSet::new();
    let mut added: BTreeMap<RrsetKey, Rrset> = BTreeMap::new();
    for (i, d) in deletions.iter().enumerate() {
        let (name, kind, want) = refused(faults, rrset_of(d, "deletions", i, &z), "deletions", i)?;
        let key = (z.name.clone(), name.clone(), kind.clone());
        let have = if removed.contains(&key) {
            None
        } else {
            s.rrsets.get(&key)
        };
        match have {
            None => {
                return Err(refuse(
                    s,
                    404,
                    "notFound",
                    &format!("The 'entity.change.deletions[{i}]' resource named '{name} ({kind})' does not exist."),
                ));
            }
            Some(have) if !same_data(have, &want) => {
                return Err(refuse(
                    s,
                    412,
                    "conditionNotMet",
                    &format!("Precondition not met for 'entity.change.deletions[{i}]'"),
                ));
            }
            Some(_) => {
                removed.insert(key);
            }
        }
    }
    for (i, a) in additions.iter().enumerate() {
        let (name, kind, set) = refused(faults, rrset_of(a, "additions", i, &z), "additions", i)?;
        let key = (z.name.clone(), name.clone(), kind.clone());
        if added.contains_key(&key) || (s.rrsets.contains_key(&key) && !removed.contains(&key)) {
            return Err(refuse(
                s,
                409,
                "alreadyExists",
                &format!("The resource 'entity.change.additions[{i}]' named '{name} ({kind})' already exists"),
            ));
        }
        let kept = types_at(&s.rrsets, &z.name, &name)
            .filter(|t| !removed.contains(&(z.name.clone(), name.clone(), t.to_string())));
        let others = kept
            .chain(types_at(&added, &z.name, &name))
            .any(|t| t != "NSEC" && (kind == "CNAME") != (t == "CNAME"));
        if others {
            return Err(refuse(
                s,
                400,
                "cnameResourceRecordSetConflict",
                &format!(
                    "The resource 'entity.change.additions[{i}]' named '{name} (CNAME)' cannot coexist with other record sets of that name"
                ),
            ));
        }
        added.insert(key, set);
    }
    for key in &removed {
        s.rrsets.remove(key);
    }
    s.rrsets.extend(added);
    s.changes_applied += 1;
    s.next_change += 1;
    let id = s.next_change.to_string();
    let pending = s.pending_polls;
    let mut v = change.clone();
    v["kind"] = json!("dns#change");
    v["id"] = json!(id);
    v["startTime"] = json!("2026-01-01T00:00:00.000Z");
    v["status"] = json!(if pending > 0 { "pending" } else { "done" });
    s.changes.insert(id, (z.name.clone(), v.clone(), pending));
    Ok(reply(200, v))
}

async fn get_change(
    State(state): State<Shared>,
    Path((project, zone, id)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let mut s = admit(&state, &headers, &project)?;
    let zone_name = zone_of(&s, &zone).map(|z| z.name.clone());
    match s.changes.get_mut(&id) {
        Some((zn, v, left)) if Some(&*zn) == zone_name.as_ref() => {
            *left = left.saturating_sub(1);
            v["status"] = json!(if *left > 0 { "pending" } else { "done" });
            Ok(reply(200, v.clone()))
        }
        _ => Err(error(
            404,
            "notFound",
            &format!("The 'parameters.changeId' resource named '{id}' does not exist."),
        )),
    }
}

fn issue(s: &mut FakeState, kind: &str) -> String {
    s.next_token += 1;
    let token = format!("ya29.fake-{kind}-{}", s.next_token);
    s.tokens.insert(token.clone());
    s.grants.push(kind.to_string());
    token
}

fn oauth_error(code: u16, error: &str, description: &str) -> Response {
    reply(code, json!({"error": error, "error_description": description}))
}

fn form(body: &[u8]) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// The checks Google's token endpoint makes of a service account's assertion.
fn check_jwt(jwt: &str, audiences: &[&str]) -> Result<(), String> {
    let mut parts = jwt.split('.');
    let (Some(h), Some(c), Some(sig), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err("not a JWT".into());
    };
    let decode = |p: &str| URL_SAFE_NO_PAD.decode(p).map_err(|e| format!("bad base64url: {e}"));
    let header: Value = serde_json::from_slice(&decode(h)?).map_err(|e| e.to_string())?;
    let claims: Value = serde_json::from_slice(&decode(c)?).map_err(|e| e.to_string())?;
    if header["alg"] != "RS256" {
        return Err(format!("alg {} is not RS256", header["alg"]));
    }
    if header["kid"] != KEY_ID {
        return Err(format!("kid {} is not the key's id", header["kid"]));
    }
    let public = test_public_key();
    let key = ring::signature::UnparsedPublicKey::new(&ring::signature::RSA_PKCS1_2048_8192_SHA256, public);
    key.verify(format!("{h}.{c}").as_bytes(), &decode(sig)?)
        .map_err(|_| "Invalid JWT Signature.".to_string())?;
    if claims["iss"] != CLIENT_EMAIL {
        return Err(format!("iss {} is not the service account", claims["iss"]));
    }
    if !audiences.iter().any(|a| claims["aud"] == *a) {
        return Err(format!("aud {} is none of {audiences:?}", claims["aud"]));
    }
    let scopes = claims["scope"].as_str().unwrap_or_default();
    if !scopes.split(' ').any(|s| s == SCOPE) {
        return Err(format!("scope {scopes:?} lacks {SCOPE}"));
    }
    let (Some(iat), Some(exp)) = (claims["iat"].as_u64(), claims["exp"].as_u64()) else {
        return Err("no iat or exp".into());
    };
    let now = now();
    if exp <= now || iat > now + 60 || exp.saturating_sub(iat) > 3600 {
        return Err(format!(
            "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe (iat {iat}, exp {exp}, now {now})"
        ));
    }
    Ok(())
}

/// The public half of [`PRIVATE_KEY`], as DER `RSAPublicKey`.
pub fn test_public_key() -> Vec<u8> {
    let b64: String = PRIVATE_KEY.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = STANDARD.decode(b64).unwrap_or_else(|e| panic!("the test key: {e}"));
    let pair = ring::signature::RsaKeyPair::from_pkcs8(&der).unwrap_or_else(|e| panic!("the test key: {e}"));
    use ring::signature::KeyPair;
    pair.public_key().as_ref().to_vec()
}

async fn token(
    State(state): State<Shared>,
    Extension(OwnUrl(url)): Extension<OwnUrl>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"))
    {
        return oauth_error(
            400,
            "invalid_request",
            "the body must be application/x-www-form-urlencoded",
        );
    }
    let f = form(&body);
    let mut s = fake::lock(&state);
    match f.get("grant_type").map(String::as_str) {
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {
            // The token URI the key file names: the fake's own, or Google's when a client reaches the fake
            // through the TLS proxy at Google's host names.
            let own = format!("{url}/token");
            if let Err(e) = check_jwt(
                f.get("assertion").map(String::as_str).unwrap_or_default(),
                &[own.as_str(), GOOGLE_TOKEN_URI],
            ) {
                return oauth_error(400, "invalid_grant", &e);
            }
            let t = issue(&mut s, "jwt");
            reply(
                200,
                json!({"access_token": t, "expires_in": s.token_lifetime, "token_type": "Bearer"}),
            )
        }
        Some("refresh_token") => {
            let ok = f.get("client_id").is_some_and(|v| v == CLIENT_ID)
                && f.get("client_secret").is_some_and(|v| v == CLIENT_SECRET)
                && f.get("refresh_token").is_some_and(|v| v == REFRESH_TOKEN);
            if !ok {
                return oauth_error(400, "invalid_grant", "Bad Request");
            }
            let t = issue(&mut s, "refresh");
            reply(
                200,
                json!({"access_token": t, "expires_in": s.token_lifetime, "token_type": "Bearer", "scope": SCOPE}),
            )
        }
        other => oauth_error(400, "unsupported_grant_type", &format!("Invalid grant_type: {other:?}")),
    }
}

async fn sts(State(state): State<Shared>, body: Bytes) -> Response {
    let f = form(&body);
    let want = [
        ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
        ("requested_token_type", "urn:ietf:params:oauth:token-type:access_token"),
        ("audience", AUDIENCE),
        ("subject_token", SUBJECT_TOKEN),
    ];
    for (k, v) in want {
        if f.get(k).map(String::as_str) != Some(v) {
            return oauth_error(400, "invalid_request", &format!("{k} is {:?}", f.get(k)));
        }
    }
    if !f.contains_key("subject_token_type") || !f.contains_key("scope") {
        return oauth_error(400, "invalid_request", "subject_token_type and scope are required");
    }
    let mut s = fake::lock(&state);
    let t = issue(&mut s, "sts");
    reply(
        200,
        json!({"access_token": t, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer", "expires_in": s.token_lifetime}),
    )
}

async fn impersonate(
    State(state): State<Shared>,
    Path(call): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut s = fake::lock(&state);
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if !bearer.is_some_and(|t| t.starts_with("ya29.fake-sts-") && s.tokens.contains(t)) {
        return error(401, "authError", "Request had invalid authentication credentials.");
    }
    if call != format!("{CLIENT_EMAIL}:generateAccessToken") {
        return error(
            404,
            "notFound",
            &format!("Not found; Gaia id not found for email {call}"),
        );
    }
    let ok = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["scope"].as_array().cloned())
        .is_some_and(|a| a.iter().any(|x| x == SCOPE));
    if !ok {
        return error(400, "invalid", "scope must include the Cloud DNS scope");
    }
    let t = issue(&mut s, "impersonation");
    let expire = now() + s.token_lifetime;
    reply(
        200,
        json!({"accessToken": t, "expireTime": crate::rfc3339::utc(expire)}),
    )
}

fn metadata_flavor(headers: &HeaderMap) -> Result<(), Response> {
    if headers.get("metadata-flavor").and_then(|v| v.to_str().ok()) == Some("Google") {
        Ok(())
    } else {
        Err((
            StatusCode::FORBIDDEN,
            "Missing required header \"Metadata-Flavor\": \"Google\"\n",
        )
            .into_response())
    }
}

async fn metadata_token(State(state): State<Shared>, headers: HeaderMap, RawQuery(raw): RawQuery) -> Response {
    if let Err(r) = metadata_flavor(&headers) {
        return r;
    }
    let q = query(&raw);
    if let Some(scopes) = q.get("scopes")
        && !scopes.split(',').any(|s| s == SCOPE)
    {
        return (StatusCode::BAD_REQUEST, "scopes lack the Cloud DNS scope").into_response();
    }
    let mut s = fake::lock(&state);
    let t = issue(&mut s, "metadata");
    reply(
        200,
        json!({"access_token": t, "expires_in": s.token_lifetime, "token_type": "Bearer"}),
    )
}

async fn metadata_project(headers: HeaderMap) -> Response {
    if let Err(r) = metadata_flavor(&headers) {
        return r;
    }
    PROJECT.into_response()
}

impl crate::lines::ZoneLines for FakeGoogle {
    fn zone_lines(&self) -> Vec<String> {
        self.lines()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlsa_svcb_and_https_rrdatas_are_held_to_presentation_format_with_absolute_targets() {
        let zone = FakeZone {
            name: "example-com".into(),
            dns_name: "example.com.".into(),
            id: "1".into(),
            visibility: "public".into(),
            peering: false,
        };
        let entry = |kind: &str, data: &str| json!({"name": "_443._tcp.www.example.com.", "type": kind, "ttl": 300, "rrdatas": [data]});
        let accepted = |kind: &str, data: &str| rrset_of(&entry(kind, data), "additions", 0, &zone).is_ok();
        assert!(accepted("TLSA", "3 1 1 0a0b0c0d"));
        assert!(!accepted("TLSA", "3 1 1 0a0b0"));
        assert!(accepted("HTTPS", "1 . alpn=\"h3,h2\" port=8443"));
        assert!(accepted("SVCB", "0 svc.example.net."));
        assert!(!accepted("SVCB", "0 svc.example.net"), "a relative target");
        assert!(!accepted("HTTPS", "1 . ipv4hint=2001:db8::1"));
        assert!(!accepted("OPENPGPKEY", "00"), "a type Cloud DNS does not hold");
    }

    #[test]
    fn the_test_key_loads() {
        assert!(test_public_key().len() > 256);
    }
}
