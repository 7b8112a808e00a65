//! Record sets as the two APIs spell them (public DNS capitalises what Private DNS writes in camel case)
//! and endpoints as extdns holds them.

use std::collections::BTreeMap;

use extdns_endpoint::{Endpoint, ProviderSpecific, RecordType};
use extdns_provider::metadata::OWNERSHIP_PROPERTY;
use serde_json::{Value, json};

use crate::config::Kind;

/// The TTL written when an endpoint has none, as external-dns writes it.
pub const DEFAULT_TTL: i64 = 300;
/// Azure stores a TXT value as strings of at most this many octets (a DNS character-string's).
pub const TXT_CHUNK: usize = extdns_endpoint::txt::CHARACTER_STRING_MAX;
/// The provider-specific property the `azure-tags` annotation becomes.
pub const TAGS: &str = "azure/tags";
/// The prefix of one metadata entry's property.
pub const METADATA_PREFIX: &str = "azure/metadata-";
/// The property listing the metadata keys.
pub const METADATA_KEYS: &str = "azure/metadata-keys";
/// The metadata key of extdns's ownership payload (`--txt-ownership=metadata`), on public and private
/// record sets alike; letters and an underscore only, which every rule on metadata keys allows (Azure
/// Resource Manager's tag names refuse `<>%&\?/`, and Azure DNS drops a key with a space without an error:
/// Azure/azure-rest-api-specs#8555).
pub const OWNERSHIP_KEY: &str = "extdns_ownership";
/// The longest metadata value Azure takes, in characters (Azure Resource Manager's tag value limit, 256:
/// learn.microsoft.com/azure/azure-resource-manager/management/tag-resources, Limitations), so the room an
/// ownership payload has.
pub const METADATA_VALUE_MAX: usize = 256;

/// The record types each service has and extdns manages. Anything else is refused by name before it is
/// sent: TLSA, HTTPS and SVCB among them, which neither API version extdns speaks holds (public DNS at
/// 2018-05-01, what external-dns v0.23.0 speaks, has no TLSA: it arrives in 2023-07-01-preview; Private DNS
/// has none of the three; no version of either has HTTPS or SVCB).
pub fn supported(kind: Kind, t: &RecordType) -> bool {
    match t {
        RecordType::A
        | RecordType::Aaaa
        | RecordType::Cname
        | RecordType::Mx
        | RecordType::Txt
        | RecordType::Srv
        | RecordType::Ptr => true,
        RecordType::Ns => kind == Kind::Public,
        _ => false,
    }
}

/// A property's key in this service's casing.
fn key(kind: Kind, public: &'static str, private: &'static str) -> &'static str {
    match kind {
        Kind::Public => public,
        Kind::Private => private,
    }
}

fn list_key(kind: Kind, t: &RecordType) -> Option<&'static str> {
    Some(match t {
        RecordType::A => key(kind, "ARecords", "aRecords"),
        RecordType::Aaaa => key(kind, "AAAARecords", "aaaaRecords"),
        RecordType::Mx => key(kind, "MXRecords", "mxRecords"),
        RecordType::Ns if kind == Kind::Public => "NSRecords",
        RecordType::Txt => key(kind, "TXTRecords", "txtRecords"),
        RecordType::Srv => key(kind, "SRVRecords", "srvRecords"),
        RecordType::Ptr => key(kind, "PTRRecords", "ptrRecords"),
        _ => return None,
    })
}

/// A TXT value as Azure stores it: strings of at most 255 octets (cut on character boundaries, as every
/// provider cuts them: [`extdns_endpoint::txt::character_strings`]).
pub fn split_txt(value: &str) -> Vec<String> {
    extdns_endpoint::txt::character_strings(value)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// Why Azure refuses a record set name with a `*` elsewhere: a wildcard record set is named `*` or has
/// `*` as its left-most label (`*.foo`), as Microsoft Learn's "Overview of DNS zones and records" and
/// "Overview of Private DNS records" describe wildcard records.
pub const WILDCARD_RULE: &str = "Azure takes a '*' in a record set name only as its whole first label";

/// Whether `name` keeps Azure's wildcard rule: no `*`, or `*` as the whole first label and nowhere else.
pub fn valid_wildcard(name: &str) -> bool {
    let rest = name.strip_prefix("*.").unwrap_or(if name == "*" { "" } else { name });
    !rest.contains('*')
}

fn target(t: &str) -> String {
    t.trim_end_matches('.').to_string()
}

/// Why an endpoint cannot be written.
pub type Invalid = String;

/// The `properties` of the record set an endpoint is written as.
pub fn properties(kind: Kind, ep: &Endpoint) -> Result<Value, Invalid> {
    let ttl = if ep.record_ttl.is_configured() {
        ep.record_ttl.0
    } else {
        DEFAULT_TTL
    };
    let t = &ep.record_type;
    if !supported(kind, t) {
        return Err(format!("{t} records are not supported by Azure {}", kind.flag()));
    }
    let targets: Vec<&str> = ep.targets.iter().map(|t| t.as_str()).collect();
    let mut props = serde_json::Map::new();
    props.insert(key(kind, "TTL", "ttl").into(), json!(ttl));
    let records: Vec<Value> = match t {
        RecordType::Cname => {
            let [one] = targets.as_slice() else {
                return Err(format!("a CNAME record set holds one target, not {}", targets.len()));
            };
            props.insert(
                key(kind, "CNAMERecord", "cnameRecord").into(),
                json!({ "cname": target(one) }),
            );
            Vec::new()
        }
        RecordType::A => targets.iter().map(|a| json!({ "ipv4Address": a })).collect(),
        RecordType::Aaaa => targets.iter().map(|a| json!({ "ipv6Address": a })).collect(),
        RecordType::Ns => targets.iter().map(|n| json!({ "nsdname": target(n) })).collect(),
        RecordType::Ptr => targets.iter().map(|n| json!({ "ptrdname": target(n) })).collect(),
        RecordType::Txt => targets.iter().map(|v| json!({ "value": split_txt(v) })).collect(),
        RecordType::Mx => targets
            .iter()
            .map(|v| match v.split_whitespace().collect::<Vec<_>>().as_slice() {
                [p, host] => p
                    .parse::<u16>()
                    .map(|p| json!({ "preference": p, "exchange": target(host) }))
                    .map_err(|_| format!("MX target {v:?} has no preference number")),
                _ => Err(format!("MX target {v:?} is not \"<preference> <host>\"")),
            })
            .collect::<Result<_, _>>()?,
        RecordType::Srv => targets
            .iter()
            .map(|v| match v.split_whitespace().collect::<Vec<_>>().as_slice() {
                [p, w, port, host] => match (p.parse::<u16>(), w.parse::<u16>(), port.parse::<u16>()) {
                    (Ok(p), Ok(w), Ok(port)) => {
                        Ok(json!({ "priority": p, "weight": w, "port": port, "target": target(host) }))
                    }
                    _ => Err(format!("SRV target {v:?} has a number out of range")),
                },
                _ => Err(format!("SRV target {v:?} is not \"<priority> <weight> <port> <host>\"")),
            })
            .collect::<Result<_, _>>()?,
        other => return Err(format!("{other} records are not supported by Azure {}", kind.flag())),
    };
    if let Some(k) = list_key(kind, t) {
        props.insert(k.into(), Value::Array(records));
    }
    let mut meta = match kind {
        Kind::Public => metadata(&ep.provider_specific).unwrap_or_default(),
        Kind::Private => BTreeMap::new(),
    };
    if let Some(payload) = ep.provider_specific.get(OWNERSHIP_PROPERTY) {
        meta.insert(OWNERSHIP_KEY.to_string(), payload.to_string());
    }
    if !meta.is_empty() {
        props.insert("metadata".into(), json!(meta));
    }
    Ok(Value::Object(props))
}

/// The metadata an endpoint's properties name (`azure/metadata-keys` and each `azure/metadata-<key>`).
fn metadata(ps: &ProviderSpecific) -> Option<BTreeMap<String, String>> {
    let keys = ps.get(METADATA_KEYS)?;
    let meta: BTreeMap<String, String> = keys
        .split(',')
        .filter_map(|k| {
            let v = ps.get(&format!("{METADATA_PREFIX}{k}"))?;
            (!v.is_empty()).then(|| (k.to_string(), v.to_string()))
        })
        .collect();
    (!meta.is_empty()).then_some(meta)
}

/// external-dns's `AdjustEndpoints` for public zones: `azure/tags` (`k1=v1,k2=v2`) becomes one property
/// per key and the sorted key list, so what is written reads back the same.
pub fn expand_tags(ep: &mut Endpoint) {
    let Some(tags) = ep.provider_specific.remove(TAGS) else {
        return;
    };
    let mut keys = std::collections::BTreeSet::new();
    for tag in tags.split(',') {
        if let Some((k, v)) = tag.trim().split_once('=') {
            let (k, v) = (k.trim(), v.trim());
            if !k.is_empty() && !v.is_empty() {
                ep.provider_specific.set(format!("{METADATA_PREFIX}{k}"), v);
                keys.insert(k.to_string());
            }
        }
    }
    if !keys.is_empty() {
        ep.provider_specific
            .set(METADATA_KEYS, keys.into_iter().collect::<Vec<_>>().join(","));
    }
}

/// The targets and TTL of a record set as read; `None` for a type extdns does not manage here, or a set
/// whose records cannot be read.
pub fn read(kind: Kind, t: &RecordType, props: &Value) -> Option<(i64, Vec<String>, ProviderSpecific)> {
    if !supported(kind, t) {
        return None;
    }
    let ttl = props.get(key(kind, "TTL", "ttl")).and_then(Value::as_i64).unwrap_or(0);
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    let targets: Vec<String> = if *t == RecordType::Cname {
        vec![s(props.get(key(kind, "CNAMERecord", "cnameRecord"))?, "cname")?]
    } else {
        let list = props.get(list_key(kind, t)?)?.as_array()?;
        list.iter()
            .map(|r| match t {
                RecordType::A => s(r, "ipv4Address"),
                RecordType::Aaaa => s(r, "ipv6Address"),
                RecordType::Ns => s(r, "nsdname"),
                RecordType::Ptr => s(r, "ptrdname"),
                RecordType::Txt => r
                    .get("value")?
                    .as_array()?
                    .iter()
                    .map(|p| p.as_str())
                    .collect::<Option<Vec<_>>>()
                    .map(|parts| parts.concat()),
                RecordType::Mx => Some(format!("{} {}", n(r, "preference")?, s(r, "exchange")?)),
                RecordType::Srv => Some(format!(
                    "{} {} {} {}",
                    n(r, "priority")?,
                    n(r, "weight")?,
                    n(r, "port")?,
                    s(r, "target")?
                )),
                _ => None,
            })
            .collect::<Option<_>>()?
    };
    let mut ps = ProviderSpecific::default();
    if let Some(meta) = props.get("metadata").and_then(Value::as_object) {
        let mut keys = Vec::new();
        for (k, v) in meta {
            // Azure's metadata keys are case-insensitive.
            if k.eq_ignore_ascii_case(OWNERSHIP_KEY) {
                if let Some(v) = v.as_str() {
                    ps.set(OWNERSHIP_PROPERTY, v);
                }
                continue;
            }
            if kind == Kind::Private {
                continue;
            }
            if let Some(v) = v.as_str() {
                ps.set(format!("{METADATA_PREFIX}{k}"), v);
                keys.push(k.clone());
            }
        }
        if !keys.is_empty() {
            keys.sort();
            ps.set(METADATA_KEYS, keys.join(","));
        }
    }
    Some((ttl, targets, ps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use extdns_endpoint::Ttl;

    #[test]
    fn both_casings_round_trip() {
        let eps = [
            Endpoint::new("a.example.org", RecordType::A, ["192.0.2.1", "192.0.2.2"]).with_ttl(Ttl(60)),
            Endpoint::new("m.example.org", RecordType::Mx, ["10 mail.example.org"]),
            Endpoint::new("s.example.org", RecordType::Srv, ["0 50 443 web.example.org"]),
            Endpoint::new("c.example.org", RecordType::Cname, ["web.example.org"]),
            Endpoint::new("p.example.org", RecordType::Ptr, ["host.example.org"]),
        ];
        for kind in [Kind::Public, Kind::Private] {
            for ep in &eps {
                let p = properties(kind, ep).unwrap_or_else(|e| panic!("{e}"));
                let (ttl, targets, _) = read(kind, &ep.record_type, &p).unwrap_or_else(|| panic!("{p}"));
                let want: Vec<String> = ep.targets.iter().map(|t| t.as_str().to_string()).collect();
                assert_eq!(targets, want, "{kind:?} {p}");
                assert_eq!(ttl, if ep.record_ttl.is_configured() { 60 } else { 300 });
            }
        }
        let a = properties(Kind::Public, &eps[0]).unwrap_or_default();
        assert!(a.get("ARecords").is_some() && a.get("TTL").is_some(), "{a}");
        let a = properties(Kind::Private, &eps[0]).unwrap_or_default();
        assert!(a.get("aRecords").is_some() && a.get("ttl").is_some(), "{a}");
    }

    #[test]
    fn a_star_is_a_valid_name_only_as_the_whole_first_label() {
        assert!(valid_wildcard("*.example.org"));
        assert!(valid_wildcard("*"));
        assert!(valid_wildcard("web.example.org"));
        assert!(
            !valid_wildcard("a-*.example.org"),
            "the ownership name of a wildcard, default flags"
        );
        assert!(!valid_wildcard("*web.example.org"));
        assert!(!valid_wildcard("a.*.example.org"));
        assert!(!valid_wildcard("*.*.example.org"));
    }

    #[test]
    fn txt_values_are_split_at_255_and_every_string_of_every_record_read() {
        let long = "x".repeat(600);
        let ep = Endpoint::new("t.example.org", RecordType::Txt, [long.as_str(), "short"]);
        let p = properties(Kind::Public, &ep).unwrap_or_default();
        let parts: Vec<usize> = p["TXTRecords"][0]["value"]
            .as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str()).map(str::len).collect())
            .unwrap_or_default();
        assert_eq!(parts, [255, 255, 90]);
        let (_, targets, _) = read(Kind::Public, &RecordType::Txt, &p).unwrap_or_default();
        assert_eq!(targets, [long, "short".to_string()]);
    }

    #[test]
    fn private_zones_have_no_ns_and_bad_targets_are_named() {
        let ns = Endpoint::new("n.example.org", RecordType::Ns, ["ns1.example.org"]);
        assert!(properties(Kind::Private, &ns).is_err());
        assert!(properties(Kind::Public, &ns).is_ok());
        let mx = Endpoint::new("m.example.org", RecordType::Mx, ["mail.example.org"]);
        assert!(properties(Kind::Public, &mx).is_err_and(|e| e.contains("mail.example.org")));
    }

    #[test]
    fn the_ownership_payload_is_one_metadata_entry_beside_the_users_on_both_services() {
        let mut ep = Endpoint::new("a.example.org", RecordType::A, ["192.0.2.1"]);
        ep.provider_specific.set(TAGS, "env=prod");
        expand_tags(&mut ep);
        ep.provider_specific.set(OWNERSHIP_PROPERTY, "extdns:v1;o=me");
        let p = properties(Kind::Public, &ep).unwrap_or_default();
        assert_eq!(
            p["metadata"],
            json!({"env": "prod", "extdns_ownership": "extdns:v1;o=me"})
        );
        let (_, _, ps) = read(Kind::Public, &RecordType::A, &p).unwrap_or_default();
        assert_eq!(ps.get(OWNERSHIP_PROPERTY), Some("extdns:v1;o=me"));
        assert_eq!(
            ps.get(METADATA_KEYS),
            Some("env"),
            "the payload is not the user's metadata"
        );
        let p = properties(Kind::Private, &ep).unwrap_or_default();
        assert_eq!(p["metadata"], json!({"extdns_ownership": "extdns:v1;o=me"}));
        let (_, _, ps) = read(Kind::Private, &RecordType::A, &json!({"ttl": 300, "aRecords": [{"ipv4Address": "192.0.2.1"}], "metadata": {"EXTDNS_OWNERSHIP": "extdns:v1;o=me", "x": "y"}})).unwrap_or_default();
        assert_eq!(
            (ps.get(OWNERSHIP_PROPERTY), ps.iter().count()),
            (Some("extdns:v1;o=me"), 1),
            "keys are case-insensitive"
        );
    }

    #[test]
    fn tags_become_metadata_and_read_back_the_same() {
        let mut ps = ProviderSpecific::default();
        ps.set(TAGS, "team=dns, env=prod,bad");
        let mut ep = Endpoint::new("a.example.org", RecordType::A, ["192.0.2.1"]).with_provider_specific(ps);
        expand_tags(&mut ep);
        assert_eq!(ep.provider_specific.get(METADATA_KEYS), Some("env,team"));
        let p = properties(Kind::Public, &ep).unwrap_or_default();
        assert_eq!(p["metadata"], json!({"env": "prod", "team": "dns"}));
        let (_, _, read_ps) = read(Kind::Public, &RecordType::A, &p).unwrap_or_default();
        assert!(read_ps.same_set(&ep.provider_specific), "{read_ps:?}");
        assert!(properties(Kind::Private, &ep).is_ok_and(|p| p.get("metadata").is_none()));
    }
}
