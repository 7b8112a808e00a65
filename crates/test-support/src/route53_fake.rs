//! A strict Route53 of our own, for what moto gets wrong: a CREATE of an existing record set is refused, a
//! DELETE must match the record set exactly, a CNAME cannot share its name, a change batch is atomic, record
//! pages carry NextRecordIdentifier, a type outside Route53's [`TYPES`] is refused, TLSA, SVCB and HTTPS
//! values are held to Route53's format ([`crate::rdata`]). It reads requests as element trees ([`crate::xml_tree`]) and writes
//! answers as text, by the element names of Route53's API reference, so it shares neither the provider's
//! serde types nor their (possibly wrong) idea of the wire format. On the [`crate::fake`]
//! skeleton: throttled as Route53 throttles (400 `Throttling`, no `Retry-After`) past its documented limit
//! ([`RATE_LIMIT`], per account: here one access key is one account), a refused record name refuses its
//! whole change batch (`InvalidChangeBatch`).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::fake::{self, Api, FakeServer, Faults, Locked, Purpose, RateLimit};
use crate::xml_tree::Element;

/// Route53's documented rate limit: five requests a second per AWS account, every API call counted
/// ("If you submit more than five requests per second, Route 53 returns an HTTP 400 error", code
/// `Throttling`), <https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/DNSLimitations.html> and
/// <https://repost.aws/knowledge-center/route-53-avoid-throttling-errors>. Metered as AWS meters it, a token
/// bucket (<https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/throttling-api-requests.html>), of five
/// tokens refilled five a second. That newer page gives the account a bucket of 50 refilled 10 a second;
/// the five a second extdns paces to stays within both.
pub const RATE_LIMIT: RateLimit = RateLimit::bucket(5, 5.0);

/// Route53's limit metered the same way at another figure: `per_second` requests a second per account, as
/// many at once (a test's lower or higher figure; [`FakeServer::with_limits`]).
pub fn per_second(per_second: u32) -> RateLimit {
    RateLimit::bucket(per_second, f64::from(per_second))
}

/// A resource record set, with the elements of Route53's `ResourceRecordSet` the fake keeps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Set {
    /// Absolute name, lower-case, `*` escaped as `\052`.
    pub name: String,
    /// Record type.
    pub kind: String,
    /// Routing-policy identifier.
    pub set_identifier: Option<String>,
    /// Weighted routing weight.
    pub weight: Option<i64>,
    /// Latency routing region.
    pub region: Option<String>,
    /// Failover role (`PRIMARY`/`SECONDARY`).
    pub failover: Option<String>,
    /// TTL in seconds; absent on alias sets.
    pub ttl: Option<i64>,
    /// The values; absent on alias sets.
    pub resource_records: Option<Values>,
    /// Alias target, for alias sets.
    pub alias_target: Option<Alias>,
    /// Attached health check id.
    pub health_check_id: Option<String>,
}

/// `ResourceRecords`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Values {
    /// One entry per value.
    pub items: Vec<Value>,
}

/// One `ResourceRecord`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Value {
    /// The value as Route53 spells it (TXT quoted).
    pub value: String,
}

/// An `AliasTarget`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Alias {
    /// Hosted zone of the target (an ELB's, or our own).
    pub hosted_zone_id: String,
    /// The target's DNS name.
    pub dns_name: String,
    /// Whether Route53 checks the target's health.
    pub evaluate_target_health: bool,
}

impl Set {
    /// The values as Route53 spells them (TXT quoted), sorted; none on an alias set.
    pub fn values(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .resource_records
            .iter()
            .flat_map(|r| &r.items)
            .map(|v| v.value.clone())
            .collect();
        v.sort();
        v
    }

    /// The set a `ResourceRecordSet` element describes; elements the fake does not keep are ignored, as
    /// Route53 would apply them.
    fn from_xml(e: &Element) -> anyhow::Result<Set> {
        let text = |name: &str| e.text_of(name).map(str::to_string);
        let number = |name: &str| {
            e.text_of(name)
                .map(|t| {
                    t.parse::<i64>()
                        .with_context(|| format!("{name} {t:?} is not a number"))
                })
                .transpose()
        };
        let values = |r: &Element| Values {
            items: r
                .all("ResourceRecord")
                .map(|v| Value {
                    value: v.text_of("Value").unwrap_or_default().to_string(),
                })
                .collect(),
        };
        let alias = |a: &Element| Alias {
            hosted_zone_id: a.text_of("HostedZoneId").unwrap_or_default().to_string(),
            dns_name: a.text_of("DNSName").unwrap_or_default().to_string(),
            evaluate_target_health: a.text_of("EvaluateTargetHealth") == Some("true"),
        };
        Ok(Set {
            name: text("Name").unwrap_or_default(),
            kind: text("Type").unwrap_or_default(),
            set_identifier: text("SetIdentifier"),
            weight: number("Weight")?,
            region: text("Region"),
            failover: text("Failover"),
            ttl: number("TTL")?,
            resource_records: e.child("ResourceRecords").map(values),
            alias_target: e.child("AliasTarget").map(alias),
            health_check_id: text("HealthCheckId"),
        })
    }

    /// The `ResourceRecordSet` element, its children in the schema's order.
    fn to_xml(&self) -> String {
        let mut out = String::from("<ResourceRecordSet>");
        let mut add = |name: &str, text: &str| out.push_str(&format!("<{name}>{}</{name}>", xml_escape(text)));
        add("Name", &self.name);
        add("Type", &self.kind);
        let optional = [
            ("SetIdentifier", self.set_identifier.clone()),
            ("Weight", self.weight.map(|w| w.to_string())),
            ("Region", self.region.clone()),
            ("Failover", self.failover.clone()),
            ("TTL", self.ttl.map(|t| t.to_string())),
        ];
        for (name, text) in optional {
            if let Some(text) = text {
                add(name, &text);
            }
        }
        if let Some(values) = &self.resource_records {
            out.push_str("<ResourceRecords>");
            for v in &values.items {
                out.push_str(&format!(
                    "<ResourceRecord><Value>{}</Value></ResourceRecord>",
                    xml_escape(&v.value)
                ));
            }
            out.push_str("</ResourceRecords>");
        }
        if let Some(a) = &self.alias_target {
            out.push_str(&format!(
                "<AliasTarget><HostedZoneId>{}</HostedZoneId><DNSName>{}</DNSName>\
                 <EvaluateTargetHealth>{}</EvaluateTargetHealth></AliasTarget>",
                xml_escape(&a.hosted_zone_id),
                xml_escape(&a.dns_name),
                a.evaluate_target_health
            ));
        }
        if let Some(id) = &self.health_check_id {
            out.push_str(&format!("<HealthCheckId>{}</HealthCheckId>", xml_escape(id)));
        }
        out.push_str("</ResourceRecordSet>");
        out
    }
}

/// The changes of a `ChangeResourceRecordSetsRequest`: each one's action and record set, in order.
fn changes_of(body: &str) -> anyhow::Result<Vec<(String, Set)>> {
    let doc = Element::parse(body)?;
    doc.every(&["ChangeBatch", "Changes", "Change"])
        .map(|c| {
            let set = c
                .child("ResourceRecordSet")
                .context("a Change without a ResourceRecordSet")?;
            Ok((c.text_of("Action").unwrap_or_default().to_string(), Set::from_xml(set)?))
        })
        .collect()
}

/// (name, type, set identifier): how Route53 identifies a record set.
pub type Key = (String, String, String);

/// One hosted zone.
#[derive(Debug, Clone, Default)]
pub struct Zone {
    /// Id without the `/hostedzone/` prefix.
    pub id: String,
    /// Absolute, lower-case.
    pub name: String,
    /// A private (VPC) zone.
    pub private: bool,
    /// Tags as (key, value).
    pub tags: Vec<(String, String)>,
    /// Record sets by [`Key`].
    pub sets: BTreeMap<Key, Set>,
}

/// Everything the fake holds and counts; inspect it through [`FakeServer::lock`].
#[derive(Debug)]
pub struct Inner {
    /// Hosted zones, in creation order.
    pub zones: Vec<Zone>,
    /// The signing headers of the last request: authorization, x-amz-date, x-amz-security-token.
    pub last_signature: Vec<(String, String)>,
    /// Change batches applied, by the number of changes in each.
    pub applied_batches: Vec<usize>,
    /// Change batches refused.
    pub refused_batches: usize,
    /// Page sizes.
    pub zone_page: usize,
    /// Most record sets per `ListResourceRecordSets` page.
    pub record_page: usize,
}

/// No zones; Route53's page sizes.
impl Default for Inner {
    fn default() -> Inner {
        Inner {
            zones: Vec::new(),
            last_signature: Vec::new(),
            applied_batches: Vec::new(),
            refused_batches: 0,
            zone_page: 100,
            record_page: 300,
        }
    }
}

impl Api for Inner {
    fn routes(_: &str) -> Router<Shared> {
        Router::new().fallback(handle)
    }

    fn purpose(method: &Method, uri: &Uri, _: &HeaderMap) -> Purpose {
        let path = uri.path().trim_end_matches('/');
        match (method.as_str(), path.ends_with("/rrset")) {
            ("GET", true) => Purpose::read("ListResourceRecordSets"),
            ("POST", true) => Purpose::write("ChangeResourceRecordSets"),
            _ if path.ends_with("/tags/hostedzone") => Purpose::read("ListTagsForResources"),
            _ if path.ends_with("/hostedzone") => Purpose::read("ListHostedZones"),
            _ => Purpose::read("other"),
        }
    }

    const CLOUD: Option<&'static str> = Some("ROUTE53");

    fn limits() -> Vec<RateLimit> {
        vec![RATE_LIMIT]
    }

    /// The access key a request is signed with (`Credential=<key>/<date>/...`): Route53 counts per account,
    /// and the fake's accounts are its access keys.
    fn account(_: &Method, _: &Uri, headers: &HeaderMap) -> String {
        access_key(headers).unwrap_or_default()
    }

    fn throttled(_: Duration) -> Response {
        error(StatusCode::BAD_REQUEST, "Throttling", "Rate exceeded")
    }

    fn unavailable(status: StatusCode) -> Response {
        error(status, "ServiceUnavailable", "Service is unavailable")
    }
}

/// The access key id of a SigV4 `Authorization` header.
pub fn access_key(headers: &HeaderMap) -> Option<String> {
    let auth = headers.get("authorization")?.to_str().ok()?;
    let credential = auth.split("Credential=").nth(1)?;
    credential.split('/').next().map(str::to_string)
}

type Shared = fake::Shared<Inner>;

/// A running fake: its `url` the endpoint, [`FakeServer::lock`] its state, log and faults; clones share it,
/// and it stops when the last is dropped.
pub type Fake = FakeServer<Inner>;

impl Fake {
    /// Add a zone; returns its id.
    pub fn zone(&self, name: &str, private: bool, tags: &[(&str, &str)]) -> String {
        let mut s = self.lock();
        let id = format!("ZFAKE{}", s.zones.len() + 1);
        let name = absolute(name);
        let mut sets = BTreeMap::new();
        for (kind, value) in [
            ("SOA", "ns.fake. admin.fake. 1 7200 900 1209600 86400"),
            ("NS", "ns.fake."),
        ] {
            let set = Set {
                name: name.clone(),
                kind: kind.into(),
                ttl: Some(172800),
                resource_records: Some(Values {
                    items: vec![Value { value: value.into() }],
                }),
                ..Set::default()
            };
            sets.insert(key(&set), set);
        }
        s.zones.push(Zone {
            id: id.clone(),
            name,
            private,
            tags: tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            sets,
        });
        id
    }

    /// Put a record set in place directly (someone else's record).
    pub fn put(&self, zone_id: &str, set: Set) {
        let mut s = self.lock();
        if let Some(z) = s.zones.iter_mut().find(|z| z.id == zone_id) {
            z.sets.insert(key(&set), set);
        }
    }

    /// The record sets of a zone (SOA and NS excluded).
    pub fn sets(&self, zone_id: &str) -> Vec<Set> {
        let s = self.lock();
        s.zones
            .iter()
            .find(|z| z.id == zone_id)
            .map(|z| {
                z.sets
                    .values()
                    .filter(|s| s.kind != "SOA" && s.kind != "NS")
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The first set of `name` (relative or absolute) and type in a zone.
    pub fn find(&self, zone_id: &str, name: &str, kind: &str) -> Option<Set> {
        self.sets(zone_id)
            .into_iter()
            .find(|s| s.name == absolute(name) && s.kind == kind)
    }
}

/// A name as Route53 stores it: lower-case, `*` as `\052`, trailing dot.
pub fn absolute(name: &str) -> String {
    let mut n = name.to_ascii_lowercase().replace('*', "\\052");
    if !n.ends_with('.') {
        n.push('.');
    }
    n
}

fn key(set: &Set) -> Key {
    (
        absolute(&set.name),
        set.kind.clone(),
        set.set_identifier.clone().unwrap_or_default(),
    )
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = format!(
        "<?xml version=\"1.0\"?>\n<ErrorResponse xmlns=\"https://route53.amazonaws.com/doc/2013-04-01/\"><Error><Type>Sender</Type><Code>{code}</Code><Message>{}</Message></Error><RequestId>fake</RequestId></ErrorResponse>",
        xml_escape(message)
    );
    (status, body).into_response()
}

fn invalid_batch(messages: &[String]) -> Response {
    let items: String = messages
        .iter()
        .map(|m| format!("<Message>{}</Message>", xml_escape(m)))
        .collect();
    let body = format!(
        "<?xml version=\"1.0\"?>\n<InvalidChangeBatch xmlns=\"https://route53.amazonaws.com/doc/2013-04-01/\"><Messages>{items}</Messages><RequestId>fake</RequestId></InvalidChangeBatch>"
    );
    (StatusCode::BAD_REQUEST, body).into_response()
}

async fn handle(State(state): State<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let mut s = fake::lock(&state);
    s.last_signature = ["authorization", "x-amz-date", "x-amz-security-token"]
        .iter()
        .filter_map(|h| Some((h.to_string(), headers.get(*h)?.to_str().ok()?.to_string())))
        .collect();
    if !headers.contains_key("authorization") {
        return error(
            StatusCode::FORBIDDEN,
            "MissingAuthenticationToken",
            "Missing Authentication Token",
        );
    }
    let path = uri.path().trim_end_matches('/').to_string();
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let q = fake::query(&uri);
    let body = String::from_utf8_lossy(&body).into_owned();
    match (method, parts.as_slice()) {
        (Method::GET, ["2013-04-01", "hostedzone"]) => list_zones(&s, &q),
        (Method::POST, ["2013-04-01", "tags", "hostedzone"]) => list_tags(&s, &body),
        (Method::GET, ["2013-04-01", "hostedzone", id, "rrset"]) => list_sets(&s, id, &q),
        (Method::POST, ["2013-04-01", "hostedzone", id, "rrset"]) => {
            let id = id.to_string();
            change(&mut s, &id, &body)
        }
        _ => error(StatusCode::NOT_FOUND, "NotFound", "no such route"),
    }
}

fn list_zones(s: &Inner, q: &BTreeMap<String, String>) -> Response {
    let max: usize = q
        .get("maxitems")
        .and_then(|m| m.parse().ok())
        .unwrap_or(100)
        .min(s.zone_page);
    let start = q
        .get("marker")
        .and_then(|m| s.zones.iter().position(|z| &z.id == m))
        .unwrap_or(0);
    let page: Vec<&Zone> = s.zones.iter().skip(start).take(max).collect();
    let next = s.zones.get(start + max);
    let zones: String = page
        .iter()
        .map(|z| {
            format!(
                "<HostedZone><Id>/hostedzone/{}</Id><Name>{}</Name><CallerReference>r</CallerReference><Config><PrivateZone>{}</PrivateZone></Config><ResourceRecordSetCount>{}</ResourceRecordSetCount></HostedZone>",
                z.id,
                z.name,
                z.private,
                z.sets.len()
            )
        })
        .collect();
    let tail = match next {
        Some(z) => format!("<IsTruncated>true</IsTruncated><NextMarker>{}</NextMarker>", z.id),
        None => "<IsTruncated>false</IsTruncated>".to_string(),
    };
    (
        StatusCode::OK,
        format!("<?xml version=\"1.0\"?>\n<ListHostedZonesResponse xmlns=\"https://route53.amazonaws.com/doc/2013-04-01/\"><HostedZones>{zones}</HostedZones><Marker></Marker>{tail}<MaxItems>{max}</MaxItems></ListHostedZonesResponse>"),
    )
        .into_response()
}

fn list_tags(s: &Inner, body: &str) -> Response {
    let Ok(req) = Element::parse(body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidInput",
            "unreadable ListTagsForResourcesRequest",
        );
    };
    let ids: Vec<&str> = req
        .every(&["ResourceIds", "ResourceId"])
        .map(|i| i.text.as_str())
        .collect();
    if ids.len() > 10 {
        return error(StatusCode::BAD_REQUEST, "InvalidInput", "at most 10 resource ids");
    }
    let sets: String = ids
        .iter()
        .filter_map(|id| s.zones.iter().find(|z| z.id == *id))
        .map(|z| {
            let tags: String = z
                .tags
                .iter()
                .map(|(k, v)| format!("<Tag><Key>{k}</Key><Value>{v}</Value></Tag>"))
                .collect();
            format!("<ResourceTagSet><ResourceType>hostedzone</ResourceType><ResourceId>{}</ResourceId><Tags>{tags}</Tags></ResourceTagSet>", z.id)
        })
        .collect();
    (
        StatusCode::OK,
        format!("<?xml version=\"1.0\"?>\n<ListTagsForResourcesResponse xmlns=\"https://route53.amazonaws.com/doc/2013-04-01/\"><ResourceTagSets>{sets}</ResourceTagSets></ListTagsForResourcesResponse>"),
    )
        .into_response()
}

fn list_sets(s: &Inner, id: &str, q: &BTreeMap<String, String>) -> Response {
    let Some(zone) = s.zones.iter().find(|z| z.id == id) else {
        return error(
            StatusCode::NOT_FOUND,
            "NoSuchHostedZone",
            &format!("No hosted zone found with ID: {id}"),
        );
    };
    if q.contains_key("identifier") && !q.contains_key("type") {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidInput",
            "identifier needs name and type",
        );
    }
    let max: usize = q
        .get("maxitems")
        .and_then(|m| m.parse().ok())
        .unwrap_or(300)
        .min(s.record_page);
    let start: Key = (
        q.get("name").map(|n| absolute(n)).unwrap_or_default(),
        q.get("type").cloned().unwrap_or_default(),
        q.get("identifier").cloned().unwrap_or_default(),
    );
    let mut it = zone.sets.range(start..);
    let page: Vec<&Set> = it.by_ref().take(max).map(|(_, v)| v).collect();
    let sets: String = page.iter().map(|s| s.to_xml()).collect();
    let tail = match it.next() {
        Some(((name, kind, ident), _)) => {
            let ident = if ident.is_empty() {
                String::new()
            } else {
                format!("<NextRecordIdentifier>{}</NextRecordIdentifier>", xml_escape(ident))
            };
            format!(
                "<IsTruncated>true</IsTruncated><NextRecordName>{name}</NextRecordName><NextRecordType>{kind}</NextRecordType>{ident}"
            )
        }
        None => "<IsTruncated>false</IsTruncated>".to_string(),
    };
    (
        StatusCode::OK,
        format!("<?xml version=\"1.0\"?>\n<ListResourceRecordSetsResponse xmlns=\"https://route53.amazonaws.com/doc/2013-04-01/\"><ResourceRecordSets>{sets}</ResourceRecordSets>{tail}<MaxItems>{max}</MaxItems></ListResourceRecordSetsResponse>"),
    )
        .into_response()
}

/// Route53's rules for one change against the zone as the batch left it so far (a name a test refused is
/// refused as an invalid record).
fn check(
    zone: &BTreeMap<Key, Set>,
    zone_name: &str,
    faults: &Faults,
    action: &str,
    set: &Set,
) -> Result<Option<Set>, String> {
    let k = key(set);
    let label = format!(
        "[name='{}', type='{}'{}]",
        k.0,
        k.1,
        if k.2.is_empty() {
            String::new()
        } else {
            format!(", set-identifier='{}'", k.2)
        }
    );
    if !(k.0 == zone_name || k.0.ends_with(&format!(".{zone_name}"))) {
        return Err(format!(
            "RRSet with DNS name {} is not permitted in zone {zone_name}",
            k.0
        ));
    }
    if faults.refuses(&k.0) {
        return Err(format!(
            "Invalid Resource Record: FATAL problem: {label} is refused by this test"
        ));
    }
    let has_values = set.resource_records.as_ref().is_some_and(|r| !r.items.is_empty());
    if action != "DELETE" && has_values == set.alias_target.is_some() {
        return Err(format!(
            "Invalid request: {label} needs either resource records or an alias target"
        ));
    }
    if action != "DELETE" {
        for v in set.resource_records.iter().flat_map(|r| &r.items) {
            value_ok(&set.kind, &v.value)?;
        }
    }
    match action {
        "CREATE" | "UPSERT" => {
            if action == "CREATE" && zone.contains_key(&k) {
                return Err(format!(
                    "Tried to create resource record set {label} but it already exists"
                ));
            }
            let same_name = (k.0.clone(), String::new(), String::new())..;
            let conflicts = zone
                .range(same_name)
                .take_while(|((n, _, _), _)| n == &k.0)
                .any(|((_, t, _), _)| *t != k.1 && (set.kind == "CNAME" || t == "CNAME"));
            if conflicts {
                return Err(format!(
                    "RRSet of type {} with DNS name {} is not permitted as it conflicts with other records with the same DNS name in zone {zone_name}",
                    k.1, k.0
                ));
            }
            Ok(Some(set.clone()))
        }
        "DELETE" => match zone.get(&k) {
            None => Err(format!(
                "Tried to delete resource record set {label} but it was not found"
            )),
            Some(current) if normalized(current) != normalized(set) => Err(format!(
                "Tried to delete resource record set {label} but the values provided do not match the current values"
            )),
            Some(_) => Ok(None),
        },
        other => Err(format!("unknown action {other}")),
    }
}

/// The record types Route53 holds: the `RRType` enum of its API reference (`ResourceRecordSet`), with TLSA,
/// SSHFP, SVCB and HTTPS added in October 2024 ("This release adds support for TLSA, SSHFP, SVCB, and HTTPS
/// record types", the 2024 Route53 API change; the Developer Guide's "Supported DNS record types").
pub const TYPES: [&str; 17] = [
    "A", "AAAA", "CAA", "CNAME", "DS", "HTTPS", "MX", "NAPTR", "NS", "PTR", "SOA", "SPF", "SRV", "SSHFP", "SVCB",
    "TLSA", "TXT",
];

/// A type outside [`TYPES`] fails Route53's request validation before any change is looked at (400
/// `InvalidInput`, the enum constraint named).
fn type_known(kind: &str) -> Result<(), String> {
    if TYPES.contains(&kind) {
        return Ok(());
    }
    Err(format!(
        "1 validation error detected: Value '{kind}' at 'changeBatch.changes.member.resourceRecordSet.type' \
         failed to satisfy constraint: Member must satisfy enum value set: [{}]",
        TYPES.join(", ")
    ))
}

/// Route53's rules for one value of a type, as the Developer Guide's "Supported DNS record types" gives
/// each type's `<Value>`: A a dotted IPv4 address; TLSA `usage selector matching-type hex` ("0 0 1
/// d2abde24..."); SVCB and HTTPS `priority target [params]` in presentation format ("1 . alpn=\"h3,h2\""),
/// the target name with or without its final dot (Route53 takes every domain name in a value as absolute).
/// A value against them is an invalid record, refusing its batch.
fn value_ok(kind: &str, value: &str) -> Result<(), String> {
    let fatal = |what: String| {
        Err(format!(
            "Invalid Resource Record: FATAL problem: {what} encountered at {value}"
        ))
    };
    match kind {
        "A" if value.parse::<std::net::Ipv4Addr>().is_err() => fatal("ARRDATAIllegalIPv4Address".into()),
        "TLSA" => crate::rdata::tlsa(value)
            .map(drop)
            .or_else(|e| fatal(format!("TLSA: {e}"))),
        "SVCB" | "HTTPS" => crate::rdata::svcb(value)
            .map(drop)
            .or_else(|e| fatal(format!("{kind}: {e}"))),
        _ => Ok(()),
    }
}

/// Route53 compares names case-insensitively and with or without the final dot.
fn normalized(s: &Set) -> Set {
    let mut s = s.clone();
    s.name = absolute(&s.name);
    if let Some(a) = &mut s.alias_target {
        a.dns_name = a.dns_name.trim_end_matches('.').to_ascii_lowercase();
    }
    s
}

fn change(locked: &mut Locked<Inner>, id: &str, body: &str) -> Response {
    let Locked { api: s, faults, .. } = locked;
    let changes = match changes_of(body) {
        Ok(changes) => changes,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "InvalidInput",
                &format!("unreadable change batch: {e:#}"),
            );
        }
    };
    let Some(zi) = s.zones.iter().position(|z| z.id == id) else {
        return error(
            StatusCode::NOT_FOUND,
            "NoSuchHostedZone",
            &format!("No hosted zone found with ID: {id}"),
        );
    };
    if changes.is_empty() || changes.len() > 1000 {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidInput",
            "a batch holds 1 to 1000 changes",
        );
    }
    if let Some(m) = changes.iter().find_map(|(_, set)| type_known(&set.kind).err()) {
        return error(StatusCode::BAD_REQUEST, "InvalidInput", &m);
    }
    // Atomic: work on a copy, keep it only when every change passed.
    let zone_name = s.zones[zi].name.clone();
    let mut sets = s.zones[zi].sets.clone();
    let mut messages = Vec::new();
    for (action, set) in &changes {
        match check(&sets, &zone_name, faults, action, set) {
            Ok(Some(set)) => {
                sets.insert(key(&set), set);
            }
            Ok(None) => {
                sets.remove(&key(set));
            }
            Err(m) => messages.push(m),
        }
    }
    if !messages.is_empty() {
        s.refused_batches += 1;
        return invalid_batch(&messages);
    }
    s.zones[zi].sets = sets;
    s.applied_batches.push(changes.len());
    (
        StatusCode::OK,
        "<?xml version=\"1.0\"?>\n<ChangeResourceRecordSetsResponse xmlns=\"https://route53.amazonaws.com/doc/2013-04-01/\"><ChangeInfo><Id>/change/C1</Id><Status>PENDING</Status><SubmittedAt>2026-01-01T00:00:00Z</SubmittedAt></ChangeInfo></ChangeResourceRecordSetsResponse>",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_set_is_written_and_read_back_by_route53_s_element_names() -> anyhow::Result<()> {
        let weighted = Set {
            name: "a.example.com.".into(),
            kind: "TXT".into(),
            set_identifier: Some("blue".into()),
            weight: Some(10),
            ttl: Some(300),
            resource_records: Some(Values {
                items: vec![Value {
                    value: "\"x & <y>\"".into(),
                }],
            }),
            ..Set::default()
        };
        let xml = weighted.to_xml();
        assert!(
            xml.starts_with("<ResourceRecordSet><Name>a.example.com.</Name><Type>TXT</Type><SetIdentifier>blue</SetIdentifier><Weight>10</Weight><TTL>300</TTL>"),
            "{xml}"
        );
        assert_eq!(Set::from_xml(&Element::parse(&xml)?)?, weighted);
        let alias = Set {
            name: "b.example.com.".into(),
            kind: "A".into(),
            alias_target: Some(Alias {
                hosted_zone_id: "Z1".into(),
                dns_name: "lb.example.net.".into(),
                evaluate_target_health: true,
            }),
            ..Set::default()
        };
        assert_eq!(Set::from_xml(&Element::parse(&alias.to_xml())?)?, alias);
        Ok(())
    }

    #[test]
    fn tlsa_svcb_and_https_values_are_held_to_route53_s_format_and_unknown_types_refused() {
        let zone = BTreeMap::new();
        let faults = Faults::default();
        let set = |kind: &str, value: &str| Set {
            name: "_443._tcp.www.example.com.".into(),
            kind: kind.into(),
            ttl: Some(300),
            resource_records: Some(Values {
                items: vec![Value { value: value.into() }],
            }),
            ..Set::default()
        };
        let create = |kind: &str, value: &str| check(&zone, "example.com.", &faults, "CREATE", &set(kind, value));
        assert!(create("TLSA", "3 1 1 0a0b0c0d").is_ok());
        assert!(create("HTTPS", "1 . alpn=\"h3,h2\"").is_ok());
        assert!(create("SVCB", "0 svc.example.net").is_ok(), "the final dot is optional");
        let refused = create("TLSA", "3 1 1 xyz").err().unwrap_or_default();
        assert!(
            refused.starts_with("Invalid Resource Record: FATAL problem"),
            "{refused}"
        );
        assert!(create("HTTPS", "1 . port=http").is_err());
        assert!(type_known("SVCB").is_ok());
        let unknown = type_known("OPENPGPKEY").err().unwrap_or_default();
        assert!(unknown.contains("failed to satisfy constraint"), "{unknown}");
    }

    #[test]
    fn a_change_batch_is_read_change_by_change_and_a_bad_number_refuses_it() -> anyhow::Result<()> {
        let body = "<ChangeResourceRecordSetsRequest xmlns=\"https://route53.amazonaws.com/doc/2013-04-01/\">\
                    <ChangeBatch><Changes><Change><Action>CREATE</Action><ResourceRecordSet><Name>a.</Name>\
                    <Type>A</Type><TTL>60</TTL></ResourceRecordSet></Change><Change><Action>DELETE</Action>\
                    <ResourceRecordSet><Name>b.</Name><Type>A</Type></ResourceRecordSet></Change></Changes>\
                    </ChangeBatch></ChangeResourceRecordSetsRequest>";
        let changes = changes_of(body)?;
        let read: Vec<(&str, &str, Option<i64>)> = changes
            .iter()
            .map(|(action, set)| (action.as_str(), set.name.as_str(), set.ttl))
            .collect();
        assert_eq!(read, [("CREATE", "a.", Some(60)), ("DELETE", "b.", None)]);
        assert!(changes_of(&body.replace("<TTL>60</TTL>", "<TTL>soon</TTL>")).is_err());
        Ok(())
    }
}
