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
    /// Any other type, spelled as the provider gave it; never created by a source.
    Other(Box<str>),
}

impl RecordType {
    /// The types external-dns knows, in the order its TXT registry tries them when reading names.
    pub const KNOWN: [RecordType; 10] = [
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
            RecordType::Other(s) => s,
        }
    }

    /// Whether the type carries a hostname target that may have a meaningful trailing dot.
    /// external-dns keeps TXT, SRV and NAPTR targets verbatim and trims one dot from the others.
    pub fn keeps_target_dots(&self) -> bool {
        matches!(self, RecordType::Txt | RecordType::Srv | RecordType::Naptr)
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
