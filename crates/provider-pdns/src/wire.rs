//! PowerDNS's JSON, and the conversions between its rrsets and endpoints: trailing dots, TXT quoting, ALIAS.

use std::borrow::Cow;

use extdns_endpoint::{Change, Endpoint, ProviderSpecific, RecordType, Target, Ttl};
use serde::{Deserialize, Serialize};

/// The provider-specific property (and annotation `external-dns.kubernetes.io/alias`) that makes a CNAME
/// an ALIAS; `--prefer-alias` sets it on every CNAME.
pub const ALIAS_PROPERTY: &str = "alias";

/// external-dns writes records whose TTL is not set with this TTL.
pub const DEFAULT_TTL: u32 = 300;

/// One zone of `GET /servers/{id}/zones`.
#[derive(Debug, Clone, Deserialize)]
pub struct ZoneInfo {
    pub id: String,
    pub name: String,
}

/// `GET /servers/{id}/zones/{zone}`: only the rrsets are read.
#[derive(Debug, Deserialize)]
pub struct ZoneData {
    #[serde(default)]
    pub rrsets: Vec<RrSet>,
}

#[derive(Debug, Deserialize)]
pub struct RrSet {
    pub name: String,
    #[serde(rename = "type")]
    pub rtype: String,
    #[serde(default)]
    pub ttl: u32,
    #[serde(default)]
    pub records: Vec<Record>,
}

#[derive(Debug, Deserialize)]
pub struct Record {
    pub content: String,
    #[serde(default)]
    pub disabled: bool,
}

/// The body of `PATCH /servers/{id}/zones/{zone}`.
#[derive(Debug, Serialize)]
pub struct Patch<'a> {
    pub rrsets: Vec<RrSetChange<'a>>,
}

#[derive(Debug, Serialize)]
pub struct RrSetChange<'a> {
    pub name: String,
    #[serde(rename = "type")]
    pub rtype: &'a str,
    /// PowerDNS refuses a TTL on a DELETE.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u32>,
    pub changetype: ChangeType,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<RecordOut<'a>>,
}

#[derive(Debug, Serialize)]
pub struct RecordOut<'a> {
    pub content: Cow<'a, str>,
    pub disabled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ChangeType {
    /// Creates the rrset or replaces all of its records.
    Replace,
    Delete,
}

/// A change this provider cannot express.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    #[error("record {name} {rtype} has no targets")]
    NoTargets { name: String, rtype: String },
}

/// `name` in PowerDNS's canonical form: lower case, with the trailing dot.
pub fn fqdn(name: &str) -> String {
    let mut out = name.to_ascii_lowercase();
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

/// The rrset type an endpoint of `zone` (canonical) is written as: a CNAME marked as alias is an ALIAS, and
/// so is a CNAME at the zone's apex, where PowerDNS allows no CNAME (external-dns converts it the same way).
pub fn wire_type<'e>(ep: &'e Endpoint, zone: &str) -> &'e str {
    if ep.record_type == RecordType::Cname
        && (ep.provider_specific.get(ALIAS_PROPERTY) == Some("true") || is_apex(&ep.dns_name, zone))
    {
        "ALIAS"
    } else {
        ep.record_type.as_str()
    }
}

/// Whether `name` is the apex of `zone` (canonical).
pub fn is_apex(name: &str, zone: &str) -> bool {
    name.trim_end_matches('.')
        .eq_ignore_ascii_case(zone.trim_end_matches('.'))
}

/// The TTL written for an endpoint: its own, or external-dns's default when it has none.
fn write_ttl(ttl: Ttl) -> u32 {
    if ttl.is_configured() {
        u32::try_from(ttl.0.clamp(1, i64::from(i32::MAX))).unwrap_or(DEFAULT_TTL)
    } else {
        DEFAULT_TTL
    }
}

/// A target as PowerDNS wants the record content: host names fully qualified with their trailing dot, TXT
/// data in quoted character-strings.
pub fn content<'a>(rtype: &RecordType, target: &'a str) -> Cow<'a, str> {
    match rtype {
        RecordType::Txt => quote_txt(target),
        RecordType::Cname | RecordType::Ns | RecordType::Ptr | RecordType::Dname | RecordType::Mx | RecordType::Srv => {
            if target.ends_with('.') {
                Cow::Borrowed(target)
            } else {
                Cow::Owned(format!("{target}."))
            }
        }
        // In canonical text, which is PowerDNS's own spelling (it refuses content it would print differently).
        t if t.has_typed_rdata() => match extdns_endpoint::canonical_target(t, target) {
            Ok(Some(canonical)) => Cow::Owned(canonical),
            _ => Cow::Borrowed(target),
        },
        _ => Cow::Borrowed(target),
    }
}

/// TXT data in the zone-file form PowerDNS requires: unchanged when it already is a sequence of quoted
/// strings, otherwise quoted, with `"` and `\` escaped, in strings of at most 255 bytes.
pub fn quote_txt(text: &str) -> Cow<'_, str> {
    // Already quoted strings (`"a" "b"`, escapes inside allowed): as they are.
    if extdns_endpoint::txt::unquoted_strings(text).is_some() {
        return Cow::Borrowed(text);
    }
    Cow::Owned(extdns_endpoint::txt::quoted_strings(text))
}

/// The endpoint an rrset of `zone` (canonical) reads as, or `None` for what extdns never manages: the
/// zone's SOA and apex NS (they belong to whoever runs the server, as with RFC2136) and rrsets whose
/// records are all disabled (external-dns hides disabled records).
pub fn endpoint_of(rrset: &RrSet, zone: &str) -> Option<Endpoint> {
    if rrset.rtype == "SOA" || (rrset.rtype == "NS" && rrset.name.eq_ignore_ascii_case(zone)) {
        return None;
    }
    let (rtype, alias) = match rrset.rtype.as_str() {
        "ALIAS" => (RecordType::Cname, true),
        other => (RecordType::from(other), false),
    };
    let targets = rrset
        .records
        .iter()
        .filter(|r| !r.disabled)
        .map(|r| read_content(&rtype, &r.content))
        .collect::<Vec<_>>();
    let mut ep = Endpoint::new(&rrset.name, rtype, targets).with_ttl(Ttl(i64::from(rrset.ttl)));
    if ep.targets.is_empty() {
        return None;
    }
    // At the apex every CNAME is written as an ALIAS, so an apex ALIAS reads as a plain CNAME (the desired
    // side's alias property is dropped there too): with or without `--prefer-alias` the two agree.
    if alias && !is_apex(&rrset.name, zone) {
        let mut ps = ProviderSpecific::default();
        ps.set(ALIAS_PROPERTY, "true");
        ep = ep.with_provider_specific(ps);
    }
    Some(ep)
}

/// A record's content as an endpoint target: TLSA, SVCB and HTTPS in their canonical text (PowerDNS prints
/// upper-case hex and its own param spelling), so they compare equal to what a source wrote; content that
/// does not parse is kept as it is, and then differs from any desired target.
fn read_content(rtype: &RecordType, content: &str) -> Target {
    match extdns_endpoint::canonical_target(rtype, content) {
        Ok(Some(canonical)) => Target::from(canonical),
        Ok(None) => Target::from(content),
        Err(e) => {
            tracing::warn!(error = %e, "PowerDNS returned a record that does not parse; it is compared as written");
            Target::from(content)
        }
    }
}

fn replace<'e>(ep: &'e Endpoint, zone: &str) -> Result<RrSetChange<'e>, EncodeError> {
    if ep.targets.is_empty() {
        return Err(EncodeError::NoTargets {
            name: ep.dns_name.clone(),
            rtype: ep.record_type.to_string(),
        });
    }
    Ok(RrSetChange {
        name: fqdn(&ep.dns_name),
        rtype: wire_type(ep, zone),
        ttl: Some(write_ttl(ep.record_ttl)),
        changetype: ChangeType::Replace,
        records: ep
            .targets
            .iter()
            .map(|t| RecordOut {
                content: content(&ep.record_type, t.as_str()),
                disabled: false,
            })
            .collect(),
    })
}

fn delete<'e>(ep: &'e Endpoint, zone: &str) -> RrSetChange<'e> {
    RrSetChange {
        name: fqdn(&ep.dns_name),
        rtype: wire_type(ep, zone),
        ttl: None,
        changetype: ChangeType::Delete,
        records: Vec::new(),
    }
}

/// The rrset operations of one change. PowerDNS replaces whole rrsets, so an update needs only its new
/// side, unless the rrset type changes (a CNAME becoming an ALIAS or back): then the old one is deleted.
/// `zone` is the canonical name of the zone the change is written to.
pub fn rrset_changes<'c>(change: &'c Change, zone: &str) -> Result<Vec<RrSetChange<'c>>, EncodeError> {
    Ok(match change {
        Change::Create(ep) => vec![replace(ep, zone)?],
        Change::Delete(ep) => vec![delete(ep, zone)],
        Change::Update { old, new } => {
            if wire_type(old, zone) == wire_type(new, zone) && old.dns_name.eq_ignore_ascii_case(&new.dns_name) {
                vec![replace(new, zone)?]
            } else {
                vec![delete(old, zone), replace(new, zone)?]
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rrset(name: &str, rtype: &str, contents: &[&str]) -> RrSet {
        RrSet {
            name: name.into(),
            rtype: rtype.into(),
            ttl: 60,
            records: contents
                .iter()
                .map(|c| Record {
                    content: (*c).into(),
                    disabled: false,
                })
                .collect(),
        }
    }

    fn alias(ep: Endpoint) -> Endpoint {
        let mut ps = ProviderSpecific::default();
        ps.set(ALIAS_PROPERTY, "true");
        ep.with_provider_specific(ps)
    }

    fn json(change: &Change) -> String {
        match rrset_changes(change, "example.org.") {
            Ok(r) => serde_json::to_string(&r).unwrap_or_default(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn names_and_host_targets_carry_trailing_dots() {
        let c = Change::Create(Endpoint::new("Web.Example.org", RecordType::Cname, ["lb.example.net"]));
        assert_eq!(
            json(&c),
            r#"[{"name":"web.example.org.","type":"CNAME","ttl":300,"changetype":"REPLACE","records":[{"content":"lb.example.net.","disabled":false}]}]"#
        );
        assert_eq!(content(&RecordType::Mx, "10 mail.example.org"), "10 mail.example.org.");
        assert_eq!(
            content(&RecordType::Srv, "0 50 5060 sip.example.org."),
            "0 50 5060 sip.example.org."
        );
        assert_eq!(content(&RecordType::A, "192.0.2.1"), "192.0.2.1");
        assert_eq!(content(&RecordType::Aaaa, "2001:db8::1"), "2001:db8::1");
    }

    #[test]
    fn a_delete_has_no_ttl_and_no_records() {
        let c = Change::Delete(Endpoint::new("a.example.org", RecordType::A, ["192.0.2.1"]));
        assert_eq!(
            json(&c),
            r#"[{"name":"a.example.org.","type":"A","changetype":"DELETE"}]"#
        );
    }

    #[test]
    fn ttls_are_the_endpoints_or_external_dns_default() {
        let c = Change::Create(Endpoint::new("a.example.org", RecordType::A, ["192.0.2.1"]).with_ttl(Ttl(42)));
        assert!(json(&c).contains(r#""ttl":42"#), "{}", json(&c));
        let huge = Change::Create(Endpoint::new("a.example.org", RecordType::A, ["192.0.2.1"]).with_ttl(Ttl(1 << 40)));
        assert!(json(&huge).contains(r#""ttl":2147483647"#), "{}", json(&huge));
    }

    #[test]
    fn txt_data_is_quoted_once() {
        assert_eq!(quote_txt("hello world"), r#""hello world""#);
        assert_eq!(
            quote_txt("\"heritage=external-dns,external-dns/owner=default\""),
            "\"heritage=external-dns,external-dns/owner=default\""
        );
        assert_eq!(quote_txt(r#"say "hi" \o/"#), r#""say \"hi\" \\o/""#);
        assert_eq!(quote_txt(r#""a" "b""#), r#""a" "b""#);
        // Quotes that do not enclose the whole text are data.
        assert_eq!(quote_txt(r#""a" b"#), r#""\"a\" b""#);
        assert_eq!(quote_txt(""), r#""""#);
        let long = "x".repeat(300);
        assert_eq!(
            quote_txt(&long),
            format!("\"{}\" \"{}\"", "x".repeat(255), "x".repeat(45))
        );
        // Strings are cut on character boundaries.
        let wide = "é".repeat(200);
        let quoted = quote_txt(&wide);
        assert!(quoted.starts_with(&format!("\"{}\" \"", "é".repeat(127))), "{quoted}");
    }

    #[test]
    fn cnames_marked_as_alias_are_written_as_alias() {
        let c = Change::Create(alias(Endpoint::new(
            "example.org",
            RecordType::Cname,
            ["lb.example.net"],
        )));
        assert!(json(&c).contains(r#""type":"ALIAS""#), "{}", json(&c));
        assert!(json(&c).contains(r#""content":"lb.example.net.""#), "{}", json(&c));
        // The property means nothing on other types.
        let a = alias(Endpoint::new("example.org", RecordType::A, ["192.0.2.1"]));
        assert_eq!(wire_type(&a, "example.org."), "A");
        // At the apex a CNAME can only be an ALIAS, marked or not.
        let apex = Change::Create(Endpoint::new("Example.org", RecordType::Cname, ["lb.example.net"]));
        assert!(json(&apex).contains(r#""type":"ALIAS""#), "{}", json(&apex));
        let plain = Change::Create(Endpoint::new("www.example.org", RecordType::Cname, ["lb.example.net"]));
        assert!(json(&plain).contains(r#""type":"CNAME""#), "{}", json(&plain));
    }

    #[test]
    fn an_update_between_cname_and_alias_deletes_the_old_rrset() {
        let old = Endpoint::new("w.example.org", RecordType::Cname, ["lb.example.net"]);
        let new = alias(old.clone());
        let c = Change::update(old, new);
        let ops = rrset_changes(&c, "example.org.").unwrap_or_default();
        assert_eq!(
            ops.iter().map(|o| (o.rtype, o.changetype)).collect::<Vec<_>>(),
            [("CNAME", ChangeType::Delete), ("ALIAS", ChangeType::Replace)]
        );
        let same = Change::update(
            Endpoint::new("w.example.org", RecordType::A, ["192.0.2.1"]),
            Endpoint::new("w.example.org", RecordType::A, ["192.0.2.2"]),
        );
        assert_eq!(
            rrset_changes(&same, "example.org.")
                .map(|o| o.len())
                .unwrap_or_default(),
            1
        );
    }

    #[test]
    fn a_record_without_targets_is_refused() {
        let c = Change::Create(Endpoint::new("a.example.org", RecordType::A, Vec::<String>::new()));
        assert_eq!(json(&c), "error: record a.example.org A has no targets");
    }

    #[test]
    fn rrsets_read_as_endpoints() {
        let zone = "example.org.";
        assert!(endpoint_of(&rrset("example.org.", "SOA", &["ns1. h. 1 2 3 4 5"]), zone).is_none());
        assert!(endpoint_of(&rrset("example.org.", "NS", &["ns1.example.org."]), zone).is_none());
        let sub_ns = endpoint_of(&rrset("sub.example.org.", "NS", &["ns1.example.org."]), zone);
        assert_eq!(sub_ns.map(|e| e.targets.0), Some(vec!["ns1.example.org".into()]));

        let Some(cname) = endpoint_of(&rrset("w.example.org.", "CNAME", &["lb.example.net."]), zone) else {
            panic!("no endpoint")
        };
        assert_eq!(cname.dns_name, "w.example.org");
        assert_eq!(cname.targets.0, vec!["lb.example.net".to_string()]);
        assert_eq!(cname.record_ttl, Ttl(60));
        assert!(cname.provider_specific.is_empty());

        let Some(al) = endpoint_of(&rrset("w.example.org.", "ALIAS", &["lb.example.net."]), zone) else {
            panic!("no endpoint")
        };
        assert_eq!(al.record_type, RecordType::Cname);
        assert_eq!(al.provider_specific.get(ALIAS_PROPERTY), Some("true"));
        let Some(apex) = endpoint_of(&rrset("example.org.", "ALIAS", &["lb.example.net."]), zone) else {
            panic!("no endpoint")
        };
        assert_eq!(apex.record_type, RecordType::Cname);
        assert!(
            apex.provider_specific.is_empty(),
            "an apex ALIAS is how an apex CNAME is written"
        );

        let txt = endpoint_of(&rrset("t.example.org.", "TXT", &["\"a b\""]), zone);
        assert_eq!(txt.map(|e| e.targets.0), Some(vec!["\"a b\"".into()]));
        let srv = endpoint_of(&rrset("_s._tcp.example.org.", "SRV", &["0 5 80 w.example.org."]), zone);
        assert_eq!(srv.map(|e| e.targets.0), Some(vec!["0 5 80 w.example.org.".into()]));
        let mx = endpoint_of(&rrset("example.org.", "MX", &["10 mail.example.org."]), zone);
        assert_eq!(mx.map(|e| e.targets.0), Some(vec!["10 mail.example.org".into()]));

        let mut disabled = rrset("d.example.org.", "A", &["192.0.2.1", "192.0.2.2"]);
        disabled.records[0].disabled = true;
        assert_eq!(
            endpoint_of(&disabled, zone).map(|e| e.targets.0),
            Some(vec!["192.0.2.2".into()])
        );
        disabled.records[1].disabled = true;
        assert!(endpoint_of(&disabled, zone).is_none());
    }

    #[test]
    fn names_are_canonical_lower_case_with_the_dot() {
        assert_eq!(fqdn("A.Example.org"), "a.example.org.");
        assert_eq!(fqdn("a.example.org."), "a.example.org.");
    }
}
