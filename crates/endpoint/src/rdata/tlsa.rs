//! TLSA record data (RFC 6698), read as external-dns v0.23's `NewTLSARecord` reads it.

use std::fmt;
use std::str::FromStr;

use super::{RdataProblem, decimal};

/// A TLSA target: `<usage> <selector> <matching type> <certificate association data>`.
///
/// Parsing follows external-dns v0.23 so a DNSEndpoint both accept means the same record: usage 0 to 3,
/// selector 0 or 1, matching type 0 to 2; the data may be split by whitespace and colons (RFC 6698 §2.2),
/// is hexadecimal of any case, and must be 64 or 128 digits for a SHA-256 or SHA-512 digest. The canonical
/// text joins it in lower case, as external-dns prints it and unlike BIND's upper case.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tlsa {
    /// Certificate usage (RFC 6698 §2.1.1).
    pub usage: u8,
    /// Selector: the whole certificate (0) or its public key (1).
    pub selector: u8,
    /// Matching type: exact (0), SHA-256 (1), SHA-512 (2).
    pub matching_type: u8,
    /// The certificate association data, as bytes.
    pub data: Vec<u8>,
}

impl FromStr for Tlsa {
    type Err = RdataProblem;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fields: Vec<&str> = s.split_whitespace().collect();
        let [usage, selector, matching_type, data @ ..] = fields.as_slice() else {
            return Err(too_few(fields.len()));
        };
        if data.is_empty() {
            return Err(too_few(fields.len()));
        }
        let usage = field("usage", usage, 3)?;
        let selector = field("selector", selector, 1)?;
        let matching_type = field("matching type", matching_type, 2)?;
        let hex: String = data.concat().chars().filter(|c| *c != ':').collect();
        let data = decode_hex(&hex)?;
        let want = match matching_type {
            1 => Some((64, "SHA-256")),
            2 => Some((128, "SHA-512")),
            _ => None,
        };
        if let Some((want, digest)) = want
            && hex.len() != want
        {
            return Err(RdataProblem::DigestLength {
                matching_type,
                digest,
                want,
                got: hex.len(),
            });
        }
        Ok(Tlsa {
            usage,
            selector,
            matching_type,
            data,
        })
    }
}

impl fmt::Display for Tlsa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {} ", self.usage, self.selector, self.matching_type)?;
        for b in &self.data {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

fn too_few(got: usize) -> RdataProblem {
    RdataProblem::FieldCount {
        want: "4 fields: usage selector matching-type certificate-data",
        got,
    }
}

fn field(name: &'static str, value: &str, max: u8) -> Result<u8, RdataProblem> {
    decimal(value, u32::from(max))
        .and_then(|v| u8::try_from(v).ok())
        .ok_or_else(|| RdataProblem::Number {
            field: name,
            value: value.to_string(),
            max: u32::from(max),
        })
}

fn decode_hex(hex: &str) -> Result<Vec<u8>, RdataProblem> {
    if hex.is_empty() {
        return Err(RdataProblem::EmptyCertificate);
    }
    let not_hex = || RdataProblem::CertificateNotHex { value: hex.to_string() };
    if !hex.len().is_multiple_of(2) {
        return Err(not_hex());
    }
    hex.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digit = |c: u8| char::from(c).to_digit(16);
            match (digit(pair[0]), digit(pair[1])) {
                (Some(hi), Some(lo)) => u8::try_from(hi * 16 + lo).map_err(|_| not_hex()),
                _ => Err(not_hex()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA256: &str = "ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789";

    fn canonical(s: &str) -> Result<String, RdataProblem> {
        s.parse::<Tlsa>().map(|t| t.to_string())
    }

    #[test]
    fn the_canonical_form_is_lower_case_hex_in_one_piece() {
        assert_eq!(
            canonical(&format!("3 1 1 {SHA256}")),
            Ok(format!("3 1 1 {}", SHA256.to_lowercase()))
        );
        let split = format!("3  1 1 {} {}", &SHA256[..32], &SHA256[32..]);
        assert_eq!(canonical(&split), Ok(format!("3 1 1 {}", SHA256.to_lowercase())));
        assert_eq!(canonical("2 0 0 AB:CD:EF"), Ok("2 0 0 abcdef".to_string()));
    }

    #[test]
    fn the_canonical_form_reads_back_to_itself() {
        let once = canonical(&format!("0 0 1 {SHA256}")).unwrap_or_default();
        assert_eq!(canonical(&once), Ok(once.clone()));
    }

    #[test]
    fn each_number_is_checked_against_its_range() {
        for (target, field, max) in [
            ("4 1 1 ab", "usage", 3),
            ("3 2 0 ab", "selector", 1),
            ("3 1 3 ab", "matching type", 2),
            ("+3 1 0 ab", "usage", 3),
            ("3 x 0 ab", "selector", 1),
        ] {
            assert!(
                matches!(target.parse::<Tlsa>(), Err(RdataProblem::Number { field: f, max: m, .. }) if f == field && m == max),
                "{target}"
            );
        }
    }

    #[test]
    fn certificate_data_must_be_hex_of_the_digest_length() {
        assert_eq!("3 1 0".parse::<Tlsa>(), Err(too_few(3)));
        assert_eq!("3 1 0 ::".parse::<Tlsa>(), Err(RdataProblem::EmptyCertificate));
        assert!(matches!(
            "3 1 0 abz0".parse::<Tlsa>(),
            Err(RdataProblem::CertificateNotHex { .. })
        ));
        assert!(matches!(
            "3 1 0 abc".parse::<Tlsa>(),
            Err(RdataProblem::CertificateNotHex { .. })
        ));
        assert_eq!(
            "3 1 1 abcd".parse::<Tlsa>(),
            Err(RdataProblem::DigestLength {
                matching_type: 1,
                digest: "SHA-256",
                want: 64,
                got: 4
            })
        );
        assert!(matches!(
            format!("3 1 2 {SHA256}").parse::<Tlsa>(),
            Err(RdataProblem::DigestLength { want: 128, .. })
        ));
        assert!("3 1 0 ab".parse::<Tlsa>().is_ok(), "an exact match has any length");
    }
}
