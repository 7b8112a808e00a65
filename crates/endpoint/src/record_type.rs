use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A DNS record type. The known types are the ones external-dns manages; anything else a provider
/// returns (SOA, CAA, ...) is kept verbatim as [`RecordType::Other`] so it round-trips untouched.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordType {
    /// `A`: IPv4 addresses.
    A,
    /// `AAAA`: IPv6 addresses.
    Aaaa,
    /// `CNAME`: one hostname (external-dns allows several targets; providers decide).
    Cname,
    /// `TXT`: text; also the registry's ownership records.
    Txt,
    /// `SRV`: `priority weight port host.` targets.
    Srv,
    /// `NS`: name-server hostnames.
    Ns,
    /// `MX`: `preference host` targets.
    Mx,
    /// `PTR`: reverse-lookup hostnames.
    Ptr,
    /// `NAPTR`: record data kept verbatim.
    Naptr,
    /// `DNAME`: a subtree redirect.
    Dname,
    /// `TLSA`: a certificate association (RFC 6698), `usage selector matching-type hex` (see [`crate::Tlsa`]).
    Tlsa,
    /// `SVCB`: a service binding (RFC 9460), `priority target [key=value ...]` (see [`crate::Svcb`]).
    Svcb,
    /// `HTTPS`: the SVCB form for HTTP origins (RFC 9460), same record data as SVCB.
    Https,
    /// Any other type, spelled as the provider gave it; never created by a source.
    Other(Box<str>),
}

impl RecordType {
    /// The types external-dns knows, in the order its TXT registry tries them when reading names; SVCB and
    /// HTTPS, which external-dns does not know, come after its last (TLSA), so its order is a prefix of this
    /// one and no name it reads is read differently here.
    pub const KNOWN: [RecordType; 13] = [
        RecordType::A,
        RecordType::Aaaa,
        RecordType::Cname,
        RecordType::Ns,
        RecordType::Mx,
        RecordType::Ptr,
        RecordType::Srv,
        RecordType::Naptr,
        RecordType::Txt,
        RecordType::Dname,
        RecordType::Tlsa,
        RecordType::Svcb,
        RecordType::Https,
    ];

    /// The type's standard upper-case spelling (`AAAA`), or the text given for [`RecordType::Other`].
    pub fn as_str(&self) -> &str {
        match self {
            RecordType::A => "A",
            RecordType::Aaaa => "AAAA",
            RecordType::Cname => "CNAME",
            RecordType::Txt => "TXT",
            RecordType::Srv => "SRV",
            RecordType::Ns => "NS",
            RecordType::Mx => "MX",
            RecordType::Ptr => "PTR",
            RecordType::Naptr => "NAPTR",
            RecordType::Dname => "DNAME",
            RecordType::Tlsa => "TLSA",
            RecordType::Svcb => "SVCB",
            RecordType::Https => "HTTPS",
            RecordType::Other(s) => s,
        }
    }

    /// Whether the type carries a hostname target that may have a meaningful trailing dot.
    /// external-dns keeps TXT, SRV and NAPTR targets verbatim and trims one dot from the others (TLSA
    /// included). SVCB and HTTPS keep theirs: their target name ends with its dot, and may end the target.
    pub fn keeps_target_dots(&self) -> bool {
        matches!(
            self,
            RecordType::Txt | RecordType::Srv | RecordType::Naptr | RecordType::Svcb | RecordType::Https
        )
    }

    /// Whether the type's targets have a typed form ([`crate::Tlsa`], [`crate::Svcb`]) whose canonical text
    /// sources store and providers read back ([`crate::canonical_target`]).
    pub fn has_typed_rdata(&self) -> bool {
        matches!(self, RecordType::Tlsa | RecordType::Svcb | RecordType::Https)
    }
}

impl fmt::Display for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RecordType {
    type Err = std::convert::Infallible;

    /// Record types are case-sensitive in external-dns (`--managed-record-types=a` manages nothing), so only
    /// the exact upper-case spellings map to known types.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "A" => RecordType::A,
            "AAAA" => RecordType::Aaaa,
            "CNAME" => RecordType::Cname,
            "TXT" => RecordType::Txt,
            "SRV" => RecordType::Srv,
            "NS" => RecordType::Ns,
            "MX" => RecordType::Mx,
            "PTR" => RecordType::Ptr,
            "NAPTR" => RecordType::Naptr,
            "DNAME" => RecordType::Dname,
            "TLSA" => RecordType::Tlsa,
            "SVCB" => RecordType::Svcb,
            "HTTPS" => RecordType::Https,
            other => RecordType::Other(other.into()),
        })
    }
}

impl From<&str> for RecordType {
    fn from(s: &str) -> Self {
        match s.parse() {
            Ok(t) => t,
            Err(never) => match never {},
        }
    }
}

impl Serialize for RecordType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RecordType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(RecordType::from(s.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_types_round_trip_through_their_names() {
        for t in RecordType::KNOWN {
            assert_eq!(RecordType::from(t.as_str()), t);
        }
    }

    #[test]
    fn external_dns_order_is_a_prefix_of_the_known_order() {
        let names: Vec<&str> = RecordType::KNOWN.iter().map(RecordType::as_str).collect();
        // registry/mapper/mapper.go's supportedRecords in v0.23.0.
        let v0_23 = [
            "A", "AAAA", "CNAME", "NS", "MX", "PTR", "SRV", "NAPTR", "TXT", "DNAME", "TLSA",
        ];
        assert_eq!(names[..v0_23.len()], v0_23);
        assert_eq!(names[v0_23.len()..], ["SVCB", "HTTPS"]);
    }

    #[test]
    fn record_types_are_case_sensitive() {
        assert_eq!(RecordType::from("a"), RecordType::Other("a".into()));
    }

    #[test]
    fn unknown_types_are_kept_verbatim() {
        let t = RecordType::from("CAA");
        assert_eq!(t.to_string(), "CAA");
        assert_eq!(serde_json::to_string(&t).ok().as_deref(), Some("\"CAA\""));
    }
}
