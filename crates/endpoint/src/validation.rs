use std::fmt;

use crate::{Endpoint, InvalidRdata, RecordType, Target, TargetKind, canonical_target};

/// The address family an A or AAAA record's targets must have.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressFamily {
    /// An A record: every target must parse as an IPv4 address.
    Ipv4,
    /// An AAAA record: every target must parse as an IPv6 address.
    Ipv6,
}

impl fmt::Display for AddressFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddressFamily::Ipv4 => "IPv4",
            AddressFamily::Ipv6 => "IPv6",
        })
    }
}

/// Why an endpoint cannot be written to DNS. Each variant names the rule it breaks, so the warning that
/// drops the endpoint tells the user what to fix.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidEndpoint {
    /// One dot-separated label of the name is over the 63-octet DNS limit.
    #[error("DNS name {name:?} has a label longer than 63 characters")]
    LabelTooLong {
        /// The offending DNS name, as given.
        name: String,
    },
    /// The name has an empty label (`a..example.org`, a leading dot, or nothing at all): no DNS name has
    /// one, so every provider would refuse it on every sync.
    #[error("DNS name {name:?} has an empty label")]
    EmptyLabel {
        /// The offending DNS name, as given.
        name: String,
    },
    /// The whole name is over the 253-character limit of a presentation-form name.
    #[error("DNS name {name:?} is longer than 253 characters")]
    NameTooLong {
        /// The offending DNS name, as given.
        name: String,
    },
    /// The `alias` provider-specific property is set on a type no provider can alias (not A, AAAA or CNAME).
    #[error("the alias property is only allowed on A, AAAA and CNAME records, not {record_type}")]
    AliasOnWrongType {
        /// The endpoint's record type.
        record_type: RecordType,
    },
    /// An A or AAAA target is not an address of the record's family (a hostname, or the other family).
    #[error("target {target:?} is not an {family} address")]
    NotAnAddress {
        /// The first target that failed.
        target: Target,
        /// The family the record type requires.
        family: AddressFamily,
    },
    /// An MX target is not a 16-bit preference followed by a host.
    #[error("MX target {target:?} is not \"<preference> <host>\"")]
    BadMx {
        /// The first target that failed.
        target: Target,
    },
    /// An SRV target is not three 16-bit numbers and a host with its trailing dot.
    #[error("SRV target {target:?} is not \"<priority> <weight> <port> <host>.\"")]
    BadSrv {
        /// The first target that failed.
        target: Target,
    },
    /// A PTR record's own name is not a reverse-lookup name.
    #[error("PTR record {name:?} is not under in-addr.arpa or ip6.arpa")]
    PtrNotReverseName {
        /// The endpoint's DNS name.
        name: String,
    },
    /// A TLSA, SVCB or HTTPS target that is not valid record data of its type.
    #[error("{0}")]
    BadRdata(#[source] InvalidRdata),
    /// A PTR record has no hostname target to point back to.
    #[error("PTR record needs at least one target that is a hostname, got {targets:?}")]
    BadPtrTargets {
        /// All of the endpoint's targets.
        targets: Vec<Target>,
    },
}

/// Check a DNS name's form: no empty label, labels of at most 63 characters, the whole name at most 253.
pub fn validate_dns_name(name: &str) -> Result<(), InvalidEndpoint> {
    let name_without_dot = name.strip_suffix('.').unwrap_or(name);
    if name_without_dot.split('.').any(str::is_empty) {
        return Err(InvalidEndpoint::EmptyLabel { name: name.to_string() });
    }
    if name_without_dot.split('.').any(|l| l.len() > 63) {
        return Err(InvalidEndpoint::LabelTooLong { name: name.to_string() });
    }
    if name_without_dot.len() > 253 {
        return Err(InvalidEndpoint::NameTooLong { name: name.to_string() });
    }
    Ok(())
}

/// external-dns's `CheckEndpoint` plus the name length limits: what the dedup wrapper runs on every
/// endpoint a source produces.
pub fn validate_endpoint(e: &Endpoint) -> Result<(), InvalidEndpoint> {
    validate_dns_name(&e.dns_name)?;
    let alias = e.provider_specific.get("alias");
    let alias_allowed = matches!(e.record_type, RecordType::A | RecordType::Aaaa | RecordType::Cname);
    if alias.is_some() && !alias_allowed {
        return Err(InvalidEndpoint::AliasOnWrongType {
            record_type: e.record_type.clone(),
        });
    }
    match e.record_type {
        RecordType::A | RecordType::Aaaa if alias != Some("true") => {
            let family = if e.record_type == RecordType::A {
                AddressFamily::Ipv4
            } else {
                AddressFamily::Ipv6
            };
            for t in e.targets.iter() {
                let ok = matches!(
                    (t.kind(), family),
                    (TargetKind::Ipv4(_), AddressFamily::Ipv4) | (TargetKind::Ipv6(_), AddressFamily::Ipv6)
                );
                if !ok {
                    return Err(InvalidEndpoint::NotAnAddress {
                        target: t.clone(),
                        family,
                    });
                }
            }
        }
        RecordType::Mx => {
            for t in e.targets.iter() {
                let fields: Vec<&str> = t.split_whitespace().collect();
                if fields.len() != 2 || fields[0].parse::<u16>().is_err() {
                    return Err(InvalidEndpoint::BadMx { target: t.clone() });
                }
            }
        }
        RecordType::Srv => {
            for t in e.targets.iter() {
                let fields: Vec<&str> = t.split_whitespace().collect();
                let ok = fields.len() == 4
                    && fields[..3].iter().all(|f| f.parse::<u16>().is_ok())
                    && fields[3].ends_with('.');
                if !ok {
                    return Err(InvalidEndpoint::BadSrv { target: t.clone() });
                }
            }
        }
        RecordType::Ptr => {
            let name = e.dns_name.to_ascii_lowercase();
            let reverse = ["in-addr.arpa", "ip6.arpa"].iter().any(|zone| {
                name.strip_suffix(zone)
                    .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
            });
            if !reverse {
                return Err(InvalidEndpoint::PtrNotReverseName {
                    name: e.dns_name.clone(),
                });
            }
            let bad = e.targets.is_empty() || e.targets.iter().any(|t| t.trim().is_empty() || t.is_ip());
            if bad {
                return Err(InvalidEndpoint::BadPtrTargets {
                    targets: e.targets.0.clone(),
                });
            }
        }
        ref t if t.has_typed_rdata() => {
            for target in e.targets.iter() {
                canonical_target(t, target).map_err(InvalidEndpoint::BadRdata)?;
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_name_with_an_empty_label_is_refused() {
        for bad in ["bad..example.org", ".example.org", "example.org..", ""] {
            assert!(
                matches!(validate_dns_name(bad), Err(InvalidEndpoint::EmptyLabel { .. })),
                "{bad:?}"
            );
        }
        for good in ["example.org", "example.org.", "*.example.org"] {
            assert!(validate_dns_name(good).is_ok(), "{good:?}");
        }
    }

    use super::*;
    use crate::ProviderSpecific;

    fn ep(name: &str, t: RecordType, targets: &[&str]) -> Endpoint {
        Endpoint::new(name, t, targets.iter().copied())
    }

    fn valid(name: &str, t: RecordType, targets: &[&str]) -> bool {
        validate_endpoint(&ep(name, t, targets)).is_ok()
    }

    #[test]
    fn a_label_over_63_characters_is_invalid() {
        let name = format!("{}.example.com", "a".repeat(64));
        assert!(matches!(
            validate_dns_name(&name),
            Err(InvalidEndpoint::LabelTooLong { .. })
        ));
        assert!(validate_dns_name(&format!("{}.example.com", "a".repeat(63))).is_ok());
    }

    #[test]
    fn a_name_over_253_characters_is_invalid() {
        let name = vec!["a".repeat(50); 6].join(".");
        assert!(matches!(
            validate_dns_name(&name),
            Err(InvalidEndpoint::NameTooLong { .. })
        ));
    }

    #[test]
    fn alias_is_only_allowed_on_a_aaaa_and_cname() {
        let mut ps = ProviderSpecific::default();
        ps.set("alias", "false");
        let srv =
            ep("_x._tcp.example.com", RecordType::Srv, &["0 50 80 x.example.com."]).with_provider_specific(ps.clone());
        assert!(matches!(
            validate_endpoint(&srv),
            Err(InvalidEndpoint::AliasOnWrongType { .. })
        ));
        let cname = ep("x.example.com", RecordType::Cname, &["y.example.com"]).with_provider_specific(ps);
        assert!(validate_endpoint(&cname).is_ok());
    }

    #[test]
    fn a_and_aaaa_targets_must_be_addresses_of_their_family() {
        for (rtype, target, ok) in [
            (RecordType::A, "1.2.3.4", true),
            (RecordType::A, "2001:db8::1", false),
            (RecordType::Aaaa, "2001:db8::1", true),
            (RecordType::Aaaa, "1.2.3.4", false),
            (RecordType::A, "lb.example.com", false),
        ] {
            assert_eq!(valid("x.com", rtype.clone(), &[target]), ok, "{rtype} {target}");
        }
    }

    #[test]
    fn the_error_names_the_target_and_the_family_it_lacks() {
        let err = validate_endpoint(&ep("x.com", RecordType::Aaaa, &["2001:db8::1", "1.2.3.4"])).err();
        assert_eq!(
            err,
            Some(InvalidEndpoint::NotAnAddress {
                target: "1.2.3.4".into(),
                family: AddressFamily::Ipv6,
            })
        );
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(text, r#"target "1.2.3.4" is not an IPv6 address"#);
    }

    #[test]
    fn alias_true_allows_hostname_targets_on_a_records() {
        let mut ps = ProviderSpecific::default();
        ps.set("alias", "true");
        assert!(validate_endpoint(&ep("x.com", RecordType::A, &["lb.example.com"]).with_provider_specific(ps)).is_ok());
    }

    #[test]
    fn mx_targets_need_a_preference_and_a_host() {
        for (target, ok) in [
            ("10 mail.x.com", true),
            ("mail.x.com", false),
            ("99999 mail.x.com", false),
        ] {
            assert_eq!(valid("x.com", RecordType::Mx, &[target]), ok, "{target}");
        }
    }

    #[test]
    fn srv_targets_need_four_fields_and_a_dotted_host() {
        for (target, ok) in [
            ("0 50 30192 x.com.", true),
            ("0 50 30192 x.com", false),
            ("0 50 x.com.", false),
            ("0 50 70000 x.com.", false),
        ] {
            assert_eq!(valid("_a._tcp.x.com", RecordType::Srv, &[target]), ok, "{target}");
        }
    }

    #[test]
    fn ptr_records_need_a_reverse_name_and_hostname_targets() {
        for (name, targets, ok) in [
            ("4.3.2.1.in-addr.arpa", &["x.com"][..], true),
            ("in-addr.arpa", &["x.com"], false),
            ("x.com", &["x.com"], false),
            ("4.3.2.1.in-addr.arpa", &["1.2.3.4"], false),
            ("4.3.2.1.in-addr.arpa", &[], false),
        ] {
            assert_eq!(valid(name, RecordType::Ptr, targets), ok, "{name} {targets:?}");
        }
        let text = validate_endpoint(&ep("4.3.2.1.in-addr.arpa", RecordType::Ptr, &["x.com", " "]))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            text,
            r#"PTR record needs at least one target that is a hostname, got ["x.com", " "]"#
        );
    }

    #[test]
    fn typed_targets_must_parse_and_the_error_names_the_field() {
        assert!(valid("_443._tcp.x.com", RecordType::Tlsa, &["3 1 0 ABCD"]));
        assert!(valid("x.com", RecordType::Https, &["1 . alpn=h2"]));
        assert!(valid("_dns.x.com", RecordType::Svcb, &["0 dns.x.com."]));
        let text = validate_endpoint(&ep("x.com", RecordType::Svcb, &["1 . port=http"]))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            text,
            r#"invalid SVCB target "1 . port=http": SvcParam port value "http" is not a port number from 0 to 65535"#
        );
    }

    #[test]
    fn other_types_are_always_valid() {
        assert!(valid("x.com", RecordType::Txt, &["anything"]));
        assert!(valid("x.com", RecordType::Cname, &[""]));
    }
}
