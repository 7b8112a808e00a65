//! One `spec.endpoints[]` entry into one [`Endpoint`], with external-dns's per-type target rules.

use std::fmt;

use extdns_endpoint::{
    Endpoint, InvalidEndpoint, ProviderSpecific, ProviderSpecificProperty, RecordType, Targets, Ttl, canonical_target,
    validate_endpoint,
};
use extdns_informer::view::DnsEndpointEntry;

/// An entry that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidEntry {
    /// Its index in `spec.endpoints`.
    pub index: usize,
    /// Why it was skipped.
    pub why: Invalid,
}

/// Why an entry cannot be published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// `dnsName` is empty.
    NoName,
    /// `recordType` is empty or not one extdns manages.
    RecordType(String),
    /// `recordTTL` is negative.
    NegativeTtl(i64),
    /// A target breaks its type's trailing-dot rule; `fixed` is what it should read.
    Target {
        /// The target as written.
        target: String,
        /// The entry's record type, whose rule it breaks.
        record_type: String,
        /// The target as the rule wants it.
        fixed: String,
    },
    /// The record breaks a rule every source's records follow (an A target that is not an IPv4 address,
    /// an SRV target without its four fields, a label over 63 characters, ...).
    Record(InvalidEndpoint),
}

impl Invalid {
    /// Whether the entry's name is unusable, so which record it stood for is unknown.
    pub fn name_unknown(&self) -> bool {
        matches!(
            self,
            Invalid::NoName
                | Invalid::Record(
                    InvalidEndpoint::LabelTooLong { .. }
                        | InvalidEndpoint::NameTooLong { .. }
                        | InvalidEndpoint::EmptyLabel { .. }
                )
        )
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Invalid::NoName => f.write_str("dnsName is empty"),
            Invalid::RecordType(t) if t.is_empty() => f.write_str("recordType is empty"),
            Invalid::RecordType(t) => write!(f, "recordType {t:?} is not a type extdns manages"),
            Invalid::NegativeTtl(t) => write!(f, "recordTTL {t} is negative"),
            Invalid::Target {
                target,
                record_type,
                fixed,
            } => write!(
                f,
                "illegal target {:?} for {record_type} record — use {:?} not {:?}",
                extdns_source::shorten(target),
                extdns_source::shorten(fixed),
                extdns_source::shorten(target)
            ),
            Invalid::Record(why) => fmt::Display::fmt(why, f),
        }
    }
}

/// The record an entry spells, verbatim (the pipeline normalises names and targets as for every source),
/// or why it cannot be published.
pub(crate) fn endpoint(e: DnsEndpointEntry<'_>) -> Result<Endpoint, Invalid> {
    if e.dns_name().is_empty() {
        return Err(Invalid::NoName);
    }
    let record_type = RecordType::KNOWN
        .into_iter()
        .find(|t| t.as_str() == e.record_type())
        .ok_or_else(|| Invalid::RecordType(e.record_type().to_string()))?;
    if e.record_ttl() < 0 {
        return Err(Invalid::NegativeTtl(e.record_ttl()));
    }
    for target in e.targets() {
        check_target(&record_type, target)?;
    }
    let targets = if record_type.has_typed_rdata() {
        canonical_targets(&record_type, e.targets())?
    } else {
        e.targets().map(str::to_string).collect()
    };
    let endpoint = Endpoint {
        dns_name: e.dns_name().to_string(),
        targets: Targets::from(targets),
        record_type,
        set_identifier: e.set_identifier().to_string(),
        record_ttl: Ttl(e.record_ttl()),
        labels: e.labels().iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
        provider_specific: ProviderSpecific(
            e.provider_specific()
                .iter()
                .map(|(name, value)| ProviderSpecificProperty {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
        ),
        ..Endpoint::default()
    };
    validate_endpoint(&endpoint).map_err(Invalid::Record)?;
    Ok(endpoint)
}

/// TLSA, SVCB and HTTPS targets in their canonical text, so a provider's read-back compares equal to them
/// (`ABCD` and `abcd`, `port=443 alpn=h2` and `alpn=h2 port=443` are one record); the first target that
/// is not valid record data skips the entry, the error naming the field.
fn canonical_targets<'a>(
    record_type: &RecordType,
    targets: impl Iterator<Item = &'a str>,
) -> Result<Vec<String>, Invalid> {
    targets
        .map(|t| match canonical_target(record_type, t) {
            Ok(canonical) => Ok(canonical.unwrap_or_else(|| t.to_string())),
            Err(e) => Err(Invalid::Record(InvalidEndpoint::BadRdata(e))),
        })
        .collect()
}

/// external-dns's trailing-dot rule for `target` of `record_type`.
fn check_target(record_type: &RecordType, target: &str) -> Result<(), Invalid> {
    let dotted = target.ends_with('.');
    let illegal = match record_type {
        // An SVCB or HTTPS target may end with its target name's dot (`0 pool.example.com.`).
        RecordType::Cname
        | RecordType::Dname
        | RecordType::Txt
        | RecordType::Mx
        | RecordType::Srv
        | RecordType::Svcb
        | RecordType::Https => false,
        RecordType::Naptr => !dotted,
        _ => dotted,
    };
    if !illegal {
        return Ok(());
    }
    let fixed = if *record_type == RecordType::Naptr {
        format!("{target}.")
    } else {
        target.strip_suffix('.').unwrap_or(target).to_string()
    };
    Err(Invalid::Target {
        target: target.to_string(),
        record_type: record_type.to_string(),
        fixed,
    })
}
