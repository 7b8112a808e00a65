//! Route53 record sets to endpoints and back, alias records included, with external-dns's property names.

use extdns_endpoint::{Endpoint, ProviderSpecific, RecordType, Ttl, canonicalize_targets, txt};

use crate::xml::{self, AliasTarget, ResourceRecordSet};

/// The TTL external-dns writes when an endpoint has none, and reports for alias records (which have none).
pub const DEFAULT_TTL: i64 = 300;

pub const ALIAS: &str = "alias";
pub const EVALUATE_TARGET_HEALTH: &str = "aws/evaluate-target-health";
pub const TARGET_HOSTED_ZONE: &str = "aws/target-hosted-zone";
pub const WEIGHT: &str = "aws/weight";
pub const REGION: &str = "aws/region";
pub const FAILOVER: &str = "aws/failover";
pub const GEO_CONTINENT: &str = "aws/geolocation-continent-code";
pub const GEO_COUNTRY: &str = "aws/geolocation-country-code";
pub const GEO_SUBDIVISION: &str = "aws/geolocation-subdivision-code";
pub const GEOPROXIMITY_REGION: &str = "aws/geoproximity-region";
pub const GEOPROXIMITY_LOCAL_ZONE_GROUP: &str = "aws/geoproximity-local-zone-group";
pub const GEOPROXIMITY_COORDINATES: &str = "aws/geoproximity-coordinates";
pub const GEOPROXIMITY_BIAS: &str = "aws/geoproximity-bias";
pub const MULTI_VALUE_ANSWER: &str = "aws/multi-value-answer";
pub const HEALTH_CHECK_ID: &str = "aws/health-check-id";

/// The record types extdns manages in Route53: external-dns's, and TLSA, HTTPS and SVCB, which Route53
/// holds since October 2024 (its `RRType` enum; the Developer Guide's "Supported DNS record types" gives
/// their `<Value>` in presentation format, which is what extdns writes and reads).
pub fn supported(kind: &str) -> bool {
    matches!(
        kind,
        "A" | "AAAA" | "CNAME" | "TXT" | "SRV" | "NS" | "PTR" | "MX" | "NAPTR" | "TLSA" | "HTTPS" | "SVCB"
    )
}

/// Route53 writes some characters of names as octal escapes; `*` (`\052`) is the one that matters.
fn unescape_name(name: &str) -> String {
    let name = name.strip_suffix('.').unwrap_or(name);
    name.replace("\\052", "*").to_ascii_lowercase()
}

/// The name as Route53 stores it: absolute, lower-case.
pub fn absolute(name: &str) -> String {
    let mut n = name.to_ascii_lowercase();
    if !n.ends_with('.') {
        n.push('.');
    }
    n
}

/// The endpoints one record set stands for (none for a type extdns does not manage).
pub fn endpoint_of(set: &ResourceRecordSet) -> Option<Endpoint> {
    if !supported(&set.kind) {
        return None;
    }
    let name = unescape_name(&set.name);
    let kind = RecordType::from(set.kind.as_str());
    let mut ps = ProviderSpecific::default();
    let mut ep = if let Some(alias) = &set.alias_target {
        ps.set(ALIAS, "true");
        ps.set(
            EVALUATE_TARGET_HEALTH,
            if alias.evaluate_target_health { "true" } else { "false" },
        );
        // Alias records have no TTL of their own; report the one their ownership record is written with.
        let ttl = set.ttl.filter(|t| *t > 0).unwrap_or(DEFAULT_TTL);
        Endpoint::new(&name, kind, [alias.dns_name.as_str()]).with_ttl(Ttl(ttl))
    } else {
        let values = set
            .resource_records
            .as_ref()
            .map(|r| r.items.as_slice())
            .unwrap_or_default();
        if kind == RecordType::Cname {
            ps.set(ALIAS, "false");
        }
        let values = txt::read_values(&kind, values.iter().map(|v| v.value.as_str()));
        let mut ep = Endpoint::new(&name, kind, values.iter().map(|v| v.as_ref())).with_ttl(Ttl(set.ttl.unwrap_or(0)));
        // TLSA, SVCB and HTTPS values in the form sources give, whoever wrote them.
        canonicalize_targets(&mut ep);
        ep
    };
    if let Some(id) = &set.set_identifier {
        ep.set_identifier = id.clone();
        if let Some(w) = set.weight {
            ps.set(WEIGHT, w.to_string());
        } else if let Some(r) = &set.region {
            ps.set(REGION, r.clone());
        } else if let Some(f) = &set.failover {
            ps.set(FAILOVER, f.clone());
        } else if set.multi_value_answer == Some(true) {
            ps.set(MULTI_VALUE_ANSWER, "");
        } else if let Some(g) = &set.geo_location {
            for (key, value) in [
                (GEO_CONTINENT, &g.continent_code),
                (GEO_COUNTRY, &g.country_code),
                (GEO_SUBDIVISION, &g.subdivision_code),
            ] {
                if let Some(v) = value {
                    ps.set(key, v.clone());
                }
            }
        } else if let Some(g) = &set.geo_proximity_location {
            if let Some(v) = &g.aws_region {
                ps.set(GEOPROXIMITY_REGION, v.clone());
            }
            if let Some(v) = &g.local_zone_group {
                ps.set(GEOPROXIMITY_LOCAL_ZONE_GROUP, v.clone());
            }
            if let Some(c) = &g.coordinates {
                ps.set(GEOPROXIMITY_COORDINATES, format!("{},{}", c.latitude, c.longitude));
            }
            if let Some(b) = g.bias {
                ps.set(GEOPROXIMITY_BIAS, b.to_string());
            }
        }
    }
    if let Some(h) = &set.health_check_id {
        ps.set(HEALTH_CHECK_ID, h.clone());
    }
    ep.provider_specific = ps;
    Some(ep)
}

/// What the provider needs to write alias records: its defaults and the zone the record goes to.
pub struct WriteContext<'a> {
    pub evaluate_target_health: bool,
    /// The id of the zone the change goes to, the target zone of same-zone aliases.
    pub zone_id: &'a str,
}

/// The target hosted zone of an alias endpoint, or `None` when it is not an alias: the explicit property,
/// else the AWS service the target belongs to, else the record's own zone.
fn alias_zone<'a>(ep: &'a Endpoint, zone_id: &'a str) -> Option<&'a str> {
    let alias = ep.provider_specific.get(ALIAS) == Some("true")
        && matches!(ep.record_type, RecordType::A | RecordType::Aaaa)
        && !ep.targets.is_empty();
    if !alias {
        return None;
    }
    if let Some(z) = ep.provider_specific.get(TARGET_HOSTED_ZONE) {
        return Some(z.strip_prefix("/hostedzone/").unwrap_or(z));
    }
    Some(canonical_hosted_zone(ep.targets[0].as_str()).unwrap_or(zone_id))
}

/// The record set an endpoint is written as.
pub fn record_set(ep: &Endpoint, cx: &WriteContext<'_>) -> ResourceRecordSet {
    let p = &ep.provider_specific;
    let mut set = ResourceRecordSet {
        name: absolute(&ep.dns_name),
        kind: ep.record_type.as_str().to_string(),
        ..ResourceRecordSet::default()
    };
    if let Some(zone) = alias_zone(ep, cx.zone_id) {
        let evaluate = match p.get(EVALUATE_TARGET_HEALTH) {
            Some(v) => v == "true",
            None => cx.evaluate_target_health,
        };
        set.alias_target = Some(AliasTarget {
            hosted_zone_id: zone.to_string(),
            dns_name: ep.targets[0].as_str().to_string(),
            evaluate_target_health: evaluate,
        });
    } else {
        set.ttl = Some(if ep.record_ttl.is_configured() {
            ep.record_ttl.0
        } else {
            DEFAULT_TTL
        });
        set.resource_records = Some(xml::ResourceRecords {
            items: ep
                .targets
                .iter()
                .map(|t| xml::ResourceRecord {
                    // Route53 holds each string of a TXT value to 255 characters.
                    value: match ep.record_type {
                        RecordType::Txt => txt::fitted(t.as_str()).into_owned(),
                        _ => t.as_str().to_string(),
                    },
                })
                .collect(),
        });
    }
    if !ep.set_identifier.is_empty() {
        set.set_identifier = Some(ep.set_identifier.clone());
        if let Some(w) = p.get(WEIGHT) {
            set.weight = Some(w.trim().parse().unwrap_or_else(|_| {
                tracing::warn!(record = %ep.dns_name, weight = w, "the weight is not a number; writing 0");
                0
            }));
        }
        set.region = p.get(REGION).map(str::to_string);
        set.failover = p.get(FAILOVER).map(str::to_string);
        if p.get(MULTI_VALUE_ANSWER).is_some() {
            set.multi_value_answer = Some(true);
        }
        let geo = xml::GeoLocation {
            continent_code: p.get(GEO_CONTINENT).map(str::to_string),
            country_code: p.get(GEO_COUNTRY).map(str::to_string),
            subdivision_code: p.get(GEO_SUBDIVISION).map(str::to_string),
        };
        if geo != xml::GeoLocation::default() {
            set.geo_location = Some(geo);
        }
        let proximity = xml::GeoProximityLocation {
            aws_region: p.get(GEOPROXIMITY_REGION).map(str::to_string),
            local_zone_group: p.get(GEOPROXIMITY_LOCAL_ZONE_GROUP).map(str::to_string),
            coordinates: p.get(GEOPROXIMITY_COORDINATES).and_then(|c| {
                let (lat, long) = c.split_once(',')?;
                Some(xml::Coordinates {
                    latitude: lat.trim().to_string(),
                    longitude: long.trim().to_string(),
                })
            }),
            bias: p.get(GEOPROXIMITY_BIAS).and_then(|b| b.trim().parse().ok()),
        };
        if proximity != xml::GeoProximityLocation::default() {
            set.geo_proximity_location = Some(proximity);
        }
    }
    set.health_check_id = p.get(HEALTH_CHECK_ID).map(str::to_string);
    set
}

/// Whether an update cannot be an UPSERT: Route53 identifies a record set by name, type and set identifier,
/// and refuses to turn a plain record into an alias (or change its routing policy) in place.
pub fn needs_delete_create(old: &Endpoint, new: &Endpoint) -> bool {
    if old.record_type != new.record_type || old.set_identifier != new.set_identifier {
        return true;
    }
    if old.record_type == RecordType::A && old.provider_specific.get(ALIAS) != new.provider_specific.get(ALIAS) {
        return true;
    }
    let policy = |ep: &Endpoint| {
        let p = &ep.provider_specific;
        [
            p.get(WEIGHT).is_some(),
            p.get(REGION).is_some(),
            p.get(FAILOVER).is_some(),
            p.get(MULTI_VALUE_ANSWER).is_some(),
            p.get(GEO_CONTINENT).is_some() || p.get(GEO_COUNTRY).is_some() || p.get(GEO_SUBDIVISION).is_some(),
            p.get(GEOPROXIMITY_REGION).is_some()
                || p.get(GEOPROXIMITY_LOCAL_ZONE_GROUP).is_some()
                || p.get(GEOPROXIMITY_COORDINATES).is_some(),
        ]
    };
    policy(old) != policy(new)
}

/// external-dns's canonicalisation of desired endpoints for Route53: CNAMEs to AWS services become A and
/// AAAA alias records (unless CNAMEs are preferred), alias records get TTL 300 and an evaluate-target-health
/// value, and `alias` is dropped where it means nothing.
pub fn adjust(endpoints: Vec<Endpoint>, prefer_cname: bool, evaluate_target_health: bool) -> Vec<Endpoint> {
    let mut extra = Vec::new();
    let mut out = Vec::with_capacity(endpoints.len());
    for mut ep in endpoints {
        // Compared with what a read gives back (long values cut into strings, then joined).
        txt::adjust_to_read_back(&mut ep);
        let is_alias_type = matches!(ep.record_type, RecordType::A | RecordType::Aaaa | RecordType::Cname);
        let alias = match ep.provider_specific.get(ALIAS).map(str::to_string) {
            Some(v) if v == "true" => {
                if !is_alias_type {
                    ep.provider_specific.remove(ALIAS);
                }
                true
            }
            Some(v) => {
                if ep.record_type == RecordType::Cname {
                    if v != "false" {
                        ep.provider_specific.set(ALIAS, "false");
                    }
                } else {
                    ep.provider_specific.remove(ALIAS);
                }
                false
            }
            None if ep.record_type == RecordType::Cname => {
                let alias = !prefer_cname
                    && ep
                        .targets
                        .first()
                        .is_some_and(|t| canonical_hosted_zone(t.as_str()).is_some());
                ep.provider_specific.set(ALIAS, if alias { "true" } else { "false" });
                alias
            }
            None => false,
        };
        if alias {
            if ep.record_ttl.is_configured() {
                ep.record_ttl = Ttl(DEFAULT_TTL);
            }
            match ep.provider_specific.get(EVALUATE_TARGET_HEALTH) {
                Some("true" | "false") => {}
                Some(_) => ep.provider_specific.set(EVALUATE_TARGET_HEALTH, "false"),
                None => ep.provider_specific.set(
                    EVALUATE_TARGET_HEALTH,
                    if evaluate_target_health { "true" } else { "false" },
                ),
            }
            if ep.record_type == RecordType::Cname {
                // One alias answers A queries, one AAAA queries.
                let mut aaaa = ep.clone();
                aaaa.record_type = RecordType::Aaaa;
                extra.push(aaaa);
                ep.record_type = RecordType::A;
            }
        } else {
            ep.provider_specific.remove(EVALUATE_TARGET_HEALTH);
        }
        out.push(ep);
    }
    out.extend(extra);
    out
}

/// The hosted zone of the AWS service a hostname belongs to, when it is one alias records can point at.
pub fn canonical_hosted_zone(hostname: &str) -> Option<&'static str> {
    CANONICAL_ZONES
        .iter()
        .find(|(suffix, _)| extdns_provider::zone::under(hostname, suffix))
        .map(|(_, zone)| *zone)
}

/// Suffixes of AWS service hostnames and the hosted zone their alias records name (AWS's published
/// values): load balancers (classic and application, then network), CloudFront, S3 websites, Elastic
/// Beanstalk, API Gateway, Global Accelerator.
const CANONICAL_ZONES: &[(&str, &str)] = &[
    // Classic and application load balancers.
    ("us-east-2.elb.amazonaws.com", "Z3AADJGX6KTTL2"),
    ("us-east-1.elb.amazonaws.com", "Z35SXDOTRQ7X7K"),
    ("us-west-1.elb.amazonaws.com", "Z368ELLRRE2KJ0"),
    ("us-west-2.elb.amazonaws.com", "Z1H1FL5HABSF5"),
    ("ca-central-1.elb.amazonaws.com", "ZQSVJUPU6J1EY"),
    ("ap-east-1.elb.amazonaws.com", "Z3DQVH9N71FHZ0"),
    ("ap-south-1.elb.amazonaws.com", "ZP97RAFLXTNZK"),
    ("ap-northeast-2.elb.amazonaws.com", "ZWKZPGTI48KDX"),
    ("ap-northeast-3.elb.amazonaws.com", "Z5LXEXXYW11ES"),
    ("ap-southeast-1.elb.amazonaws.com", "Z1LMS91P8CMLE5"),
    ("ap-southeast-2.elb.amazonaws.com", "Z1GM3OXH4ZPM65"),
    ("ap-northeast-1.elb.amazonaws.com", "Z14GRHDCWA56QT"),
    ("eu-central-1.elb.amazonaws.com", "Z215JYRZR1TBD5"),
    ("eu-west-1.elb.amazonaws.com", "Z32O12XQLNTSW2"),
    ("eu-west-2.elb.amazonaws.com", "ZHURV8PSTC4K8"),
    ("eu-west-3.elb.amazonaws.com", "Z3Q77PNBQS71R4"),
    ("eu-north-1.elb.amazonaws.com", "Z23TAZ7KKC4VVA"),
    ("eu-south-1.elb.amazonaws.com", "Z3ULH7SSC9OV64"),
    ("sa-east-1.elb.amazonaws.com", "Z2P70J7HTTTPLU"),
    ("me-south-1.elb.amazonaws.com", "ZS929ML54UICD"),
    ("af-south-1.elb.amazonaws.com", "Z268VQBMOI5EKX"),
    ("cn-north-1.elb.amazonaws.com.cn", "Z1GDH35T77C1KE"),
    ("cn-northwest-1.elb.amazonaws.com.cn", "ZM7IZAIOVVDZF"),
    // Network load balancers.
    ("elb.us-east-2.amazonaws.com", "ZLMOA37VPKANP"),
    ("elb.us-east-1.amazonaws.com", "Z26RNL4JYFTOTI"),
    ("elb.us-west-1.amazonaws.com", "Z24FKFUX50B4VW"),
    ("elb.us-west-2.amazonaws.com", "Z18D5FSROUN65G"),
    ("elb.ca-central-1.amazonaws.com", "Z2EPGBW3API2WT"),
    ("elb.ap-east-1.amazonaws.com", "Z12Y7K3UBGUAD1"),
    ("elb.ap-south-1.amazonaws.com", "ZVDDRBQ08TROA"),
    ("elb.ap-northeast-2.amazonaws.com", "ZIBE1TIR4HY56"),
    ("elb.ap-southeast-1.amazonaws.com", "ZKVM4W9LS7TM"),
    ("elb.ap-southeast-2.amazonaws.com", "ZCT6FZBF4DROD"),
    ("elb.ap-northeast-1.amazonaws.com", "Z31USIVHYNEOWT"),
    ("elb.eu-central-1.amazonaws.com", "Z3F0SRJ5LGBH90"),
    ("elb.eu-west-1.amazonaws.com", "Z2IFOLAFXWLO4F"),
    ("elb.eu-west-2.amazonaws.com", "ZD4D7Y8KGAS4G"),
    ("elb.eu-west-3.amazonaws.com", "Z1CMS0P5QUZ6D5"),
    ("elb.eu-north-1.amazonaws.com", "Z1UDT6IFJ4EJM"),
    ("elb.sa-east-1.amazonaws.com", "ZTK26PT1VY4CU"),
    // CloudFront.
    ("cloudfront.net", "Z2FDTNDATAQYW2"),
    // S3 websites.
    ("s3-website-us-east-1.amazonaws.com", "Z3AQBSTGFYJSTF"),
    ("s3-website.us-east-2.amazonaws.com", "Z2O1EMRO9K5GLX"),
    ("s3-website-us-west-1.amazonaws.com", "Z2F56UZL2M1ACD"),
    ("s3-website-us-west-2.amazonaws.com", "Z3BJ6K6RIION7M"),
    ("s3-website-eu-west-1.amazonaws.com", "Z1BKCTXD74EZPE"),
    ("s3-website.eu-central-1.amazonaws.com", "Z21DNDUVLTQW6Q"),
    ("s3-website-ap-northeast-1.amazonaws.com", "Z2M4EHUR26P7ZW"),
    ("s3-website-ap-southeast-1.amazonaws.com", "Z3O0J2DXBE1FTB"),
    ("s3-website-ap-southeast-2.amazonaws.com", "Z1WCIGYICN2BYD"),
    ("s3-website-sa-east-1.amazonaws.com", "Z7KQH4QJS55SO"),
    // Elastic Beanstalk.
    ("us-east-1.elasticbeanstalk.com", "Z117KPS5GTRQ2G"),
    ("us-west-2.elasticbeanstalk.com", "Z38NKT9BP95V3O"),
    ("eu-west-1.elasticbeanstalk.com", "Z2NYPWQ7DFZAZH"),
    // API Gateway (regional endpoints).
    ("execute-api.us-east-1.amazonaws.com", "Z1UJRXOUMOOFQ8"),
    ("execute-api.us-west-2.amazonaws.com", "Z2OJLYMUO9EFXC"),
    ("execute-api.eu-west-1.amazonaws.com", "ZLY8HYME6SFDD"),
    // Global Accelerator.
    ("awsglobalaccelerator.com", "Z2BJ6XQ5FK7U4H"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_txt_value_over_255_characters_is_written_in_strings_and_read_back_whole() {
        let value = format!("\"heritage=external-dns,external-dns/owner={}\"", "o".repeat(300));
        let ep = Endpoint::new("a-web.example.com", RecordType::Txt, [value.as_str()]);
        let cx = WriteContext {
            evaluate_target_health: false,
            zone_id: "Z1",
        };
        let set = record_set(&ep, &cx);
        let written = &set
            .resource_records
            .as_ref()
            .map(|r| r.items[0].value.clone())
            .unwrap_or_default();
        assert!(written.contains("\" \""), "several strings: {written}");
        let read = endpoint_of(&set).map(|e| e.targets[0].as_str().to_string());
        assert_eq!(read, Some(value));
    }

    fn ps(pairs: &[(&str, &str)]) -> ProviderSpecific {
        let mut p = ProviderSpecific::default();
        for (k, v) in pairs {
            p.set(*k, *v);
        }
        p
    }

    #[test]
    fn aws_service_hostnames_have_their_canonical_zone() {
        assert_eq!(
            canonical_hosted_zone("my-lb-123.us-east-1.elb.amazonaws.com"),
            Some("Z35SXDOTRQ7X7K")
        );
        assert_eq!(
            canonical_hosted_zone("dualstack.my-lb-123.eu-west-1.elb.amazonaws.com."),
            Some("Z32O12XQLNTSW2")
        );
        assert_eq!(
            canonical_hosted_zone("nlb-1.elb.us-west-2.amazonaws.com"),
            Some("Z18D5FSROUN65G")
        );
        assert_eq!(canonical_hosted_zone("d111.cloudfront.net"), Some("Z2FDTNDATAQYW2"));
        assert_eq!(canonical_hosted_zone("cloudfront.net"), None);
        assert_eq!(canonical_hosted_zone("evilcloudfront.net"), None);
        assert_eq!(canonical_hosted_zone("web.example.com"), None);
    }

    #[test]
    fn a_cname_to_a_load_balancer_becomes_a_and_aaaa_aliases() {
        let cname = Endpoint::new(
            "www.example.com",
            RecordType::Cname,
            ["lb-1.us-east-1.elb.amazonaws.com"],
        )
        .with_ttl(Ttl(60));
        let out = adjust(vec![cname], false, true);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].record_type, RecordType::A);
        assert_eq!(out[1].record_type, RecordType::Aaaa);
        for ep in &out {
            assert_eq!(ep.record_ttl, Ttl(DEFAULT_TTL));
            assert_eq!(ep.provider_specific.get(ALIAS), Some("true"));
            assert_eq!(ep.provider_specific.get(EVALUATE_TARGET_HEALTH), Some("true"));
        }
    }

    #[test]
    fn preferring_cnames_keeps_the_cname() {
        let cname = Endpoint::new(
            "www.example.com",
            RecordType::Cname,
            ["lb-1.us-east-1.elb.amazonaws.com"],
        );
        let out = adjust(vec![cname], true, true);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].record_type, RecordType::Cname);
        assert_eq!(out[0].provider_specific.get(ALIAS), Some("false"));
        assert_eq!(out[0].provider_specific.get(EVALUATE_TARGET_HEALTH), None);
    }

    #[test]
    fn alias_means_nothing_on_other_types() {
        let txt = Endpoint::new("t.example.com", RecordType::Txt, ["\"x\""])
            .with_provider_specific(ps(&[(ALIAS, "true"), (EVALUATE_TARGET_HEALTH, "true")]));
        let a =
            Endpoint::new("a.example.com", RecordType::A, ["1.2.3.4"]).with_provider_specific(ps(&[(ALIAS, "false")]));
        let out = adjust(vec![txt, a], false, true);
        assert_eq!(out[0].provider_specific.get(ALIAS), None);
        assert_eq!(out[1].provider_specific.get(ALIAS), None);
        let odd = Endpoint::new("b.example.com", RecordType::A, ["x.cloudfront.net"])
            .with_provider_specific(ps(&[(ALIAS, "true"), (EVALUATE_TARGET_HEALTH, "maybe")]));
        assert_eq!(
            adjust(vec![odd], false, true)[0]
                .provider_specific
                .get(EVALUATE_TARGET_HEALTH),
            Some("false")
        );
    }

    #[test]
    fn alias_records_round_trip() {
        let ep = Endpoint::new("www.example.com", RecordType::Aaaa, ["d1.cloudfront.net"])
            .with_ttl(Ttl(DEFAULT_TTL))
            .with_provider_specific(ps(&[(ALIAS, "true"), (EVALUATE_TARGET_HEALTH, "false")]));
        let cx = WriteContext {
            evaluate_target_health: true,
            zone_id: "ZOWN",
        };
        let set = record_set(&ep, &cx);
        assert_eq!(set.ttl, None);
        assert!(set.resource_records.is_none());
        let alias = set.alias_target.as_ref().expect("a value");
        assert_eq!(alias.hosted_zone_id, "Z2FDTNDATAQYW2");
        assert!(!alias.evaluate_target_health);
        let back = endpoint_of(&set).expect("a value");
        assert_eq!(back.dns_name, ep.dns_name);
        assert_eq!(back.record_type, ep.record_type);
        assert!(back.targets.same(&ep.targets));
        assert_eq!(back.record_ttl, Ttl(DEFAULT_TTL));
        assert!(back.provider_specific.same_set(&ep.provider_specific));
    }

    #[test]
    fn an_alias_to_a_record_of_the_zone_names_the_zone() {
        let ep = Endpoint::new("apex.example.com", RecordType::A, ["www.example.com"])
            .with_provider_specific(ps(&[(ALIAS, "true")]));
        let set = record_set(
            &ep,
            &WriteContext {
                evaluate_target_health: true,
                zone_id: "ZOWN",
            },
        );
        let alias = set.alias_target.expect("a value");
        assert_eq!(alias.hosted_zone_id, "ZOWN");
        assert!(alias.evaluate_target_health, "the default applies");
        let explicit = Endpoint::new("apex.example.com", RecordType::A, ["x.example.org"])
            .with_provider_specific(ps(&[(ALIAS, "true"), (TARGET_HOSTED_ZONE, "/hostedzone/ZOTHER")]));
        let cx = WriteContext {
            evaluate_target_health: true,
            zone_id: "ZOWN",
        };
        assert_eq!(
            record_set(&explicit, &cx).alias_target.expect("a value").hosted_zone_id,
            "ZOTHER"
        );
    }

    #[test]
    fn every_routing_policy_round_trips() {
        let cx = WriteContext {
            evaluate_target_health: true,
            zone_id: "Z",
        };
        let cases: Vec<Vec<(&str, &str)>> = vec![
            vec![(WEIGHT, "10")],
            vec![(REGION, "eu-west-1")],
            vec![(FAILOVER, "PRIMARY"), (HEALTH_CHECK_ID, "hc-1")],
            vec![(MULTI_VALUE_ANSWER, "")],
            vec![(GEO_CONTINENT, "EU")],
            vec![(GEO_COUNTRY, "US"), (GEO_SUBDIVISION, "CA")],
            vec![(GEOPROXIMITY_REGION, "us-east-1"), (GEOPROXIMITY_BIAS, "20")],
            vec![(GEOPROXIMITY_COORDINATES, "49.22,-74.01")],
            vec![(GEOPROXIMITY_LOCAL_ZONE_GROUP, "usw2-lax1-az1")],
        ];
        for props in cases {
            let ep = Endpoint::new("r.example.com", RecordType::A, ["1.2.3.4"])
                .with_ttl(Ttl(60))
                .with_set_identifier("id-1")
                .with_provider_specific(ps(&props));
            let set = record_set(&ep, &cx);
            assert_eq!(set.set_identifier.as_deref(), Some("id-1"));
            let back = endpoint_of(&set).expect("a value");
            assert_eq!(back.set_identifier, "id-1");
            assert!(
                back.provider_specific.same_set(&ep.provider_specific),
                "{props:?}: {:?}",
                back.provider_specific
            );
        }
    }

    #[test]
    fn wildcards_and_plain_records_are_read() {
        let set = ResourceRecordSet {
            name: "\\052.Example.com.".into(),
            kind: "CNAME".into(),
            ttl: Some(60),
            resource_records: Some(xml::ResourceRecords {
                items: vec![xml::ResourceRecord {
                    value: "target.example.org.".into(),
                }],
            }),
            ..ResourceRecordSet::default()
        };
        let ep = endpoint_of(&set).expect("a value");
        assert_eq!(ep.dns_name, "*.example.com");
        assert_eq!(ep.targets[0].as_str(), "target.example.org");
        assert_eq!(ep.provider_specific.get(ALIAS), Some("false"));
        assert_eq!(ep.record_ttl, Ttl(60));
        let soa = ResourceRecordSet {
            kind: "SOA".into(),
            ..set
        };
        assert!(endpoint_of(&soa).is_none());
    }

    #[test]
    fn tlsa_https_and_svcb_values_are_written_in_presentation_format_and_read_back_canonical() {
        let cx = WriteContext {
            evaluate_target_health: false,
            zone_id: "Z1",
        };
        let digest = "0a".repeat(32);
        let cases = [
            (RecordType::Tlsa, "_443._tcp.www.example.com", format!("3 1 1 {digest}")),
            (
                RecordType::Https,
                "www.example.com",
                "1 . alpn=h2,h3 port=8443".to_string(),
            ),
            (RecordType::Svcb, "_dns.example.com", "0 svc.example.net.".to_string()),
        ];
        for (kind, name, target) in cases {
            let ep = Endpoint::new(name, kind.clone(), [target.as_str()]).with_ttl(Ttl(300));
            let set = record_set(&ep, &cx);
            assert_eq!(set.kind, kind.as_str());
            let written: Vec<&str> = set
                .resource_records
                .iter()
                .flat_map(|r| &r.items)
                .map(|v| v.value.as_str())
                .collect();
            assert_eq!(written, [target.as_str()]);
            let back = endpoint_of(&set).expect("a managed type");
            assert!(back.targets.same(&ep.targets), "{kind}: {:?}", back.targets);
        }
        // Route53 answers a value as it was written by whoever wrote it: another spelling of the same data
        // reads back in the canonical form, so the plan finds nothing to change.
        let mut other = record_set(
            &Endpoint::new("www.example.com", RecordType::Https, ["1 . alpn=h2"]),
            &cx,
        );
        other.resource_records = Some(xml::ResourceRecords {
            items: vec![xml::ResourceRecord {
                value: "1 . alpn=\"h2\"".into(),
            }],
        });
        let back = endpoint_of(&other).expect("a managed type");
        assert_eq!(back.targets[0].as_str(), "1 . alpn=h2");
    }

    #[test]
    fn upserts_cannot_change_identity_or_policy() {
        let a = Endpoint::new("r.example.com", RecordType::A, ["1.2.3.4"]);
        let b = Endpoint::new("r.example.com", RecordType::A, ["1.2.3.5"]);
        assert!(!needs_delete_create(&a, &b));
        let alias = b.clone().with_provider_specific(ps(&[(ALIAS, "true")]));
        assert!(needs_delete_create(&a, &alias));
        let weighted = a
            .clone()
            .with_set_identifier("x")
            .with_provider_specific(ps(&[(WEIGHT, "1")]));
        let regional = a
            .clone()
            .with_set_identifier("x")
            .with_provider_specific(ps(&[(REGION, "eu-west-1")]));
        assert!(needs_delete_create(&weighted, &regional));
        assert!(needs_delete_create(&a, &weighted));
    }
}
