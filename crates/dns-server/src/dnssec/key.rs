//! A zone's signing key as a value: its algorithm and its private key in PKCS #8, as kept in a Kubernetes
//! Secret or a file, and what the zone publishes of it (DNSKEY, CDS, CDNSKEY) and the parent needs (DS).
//!
//! One key per zone, a CSK (combined signing key, flags 257): it signs the DNSKEY set and every other set.
//! A KSK/ZSK split exists so a large zone can roll its ZSK without a DS change at the parent; an online
//! signer re-signs set by set anyway, so a ZSK roll buys nothing here and a CSK halves the DNSKEY set (the
//! largest answer a resolver fetches) and the keys to keep (docs/dnssec.md).

use std::fmt;
use std::str::FromStr;

use hickory_proto::dnssec::crypto::{EcdsaSigningKey, Ed25519SigningKey};
use hickory_proto::dnssec::rdata::{CDNSKEY, CDS, DNSKEY, DS};
use hickory_proto::dnssec::{Algorithm, DigestType, PublicKey, SigningKey};
use hickory_proto::rr::Name;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair};

use super::DnssecError;

/// The signing algorithms offered: ECDSA P-256 (algorithm 13, the default: every validator has it) and
/// Ed25519 (algorithm 15: smaller and faster, not yet everywhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyAlgorithm {
    /// ECDSAP256SHA256 (13).
    #[default]
    EcdsaP256,
    /// ED25519 (15).
    Ed25519,
}

impl KeyAlgorithm {
    /// The DNSSEC algorithm number's mnemonic, as a Secret and the flags spell it.
    pub fn mnemonic(self) -> &'static str {
        match self {
            KeyAlgorithm::EcdsaP256 => "ECDSAP256SHA256",
            KeyAlgorithm::Ed25519 => "ED25519",
        }
    }

    fn algorithm(self) -> Algorithm {
        match self {
            KeyAlgorithm::EcdsaP256 => Algorithm::ECDSAP256SHA256,
            KeyAlgorithm::Ed25519 => Algorithm::ED25519,
        }
    }
}

impl fmt::Display for KeyAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mnemonic())
    }
}

impl FromStr for KeyAlgorithm {
    type Err = DnssecError;

    /// The mnemonic or the number, in any case: `ECDSAP256SHA256`/`13`, `ED25519`/`15`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_uppercase().as_str() {
            "ECDSAP256SHA256" | "13" => Ok(KeyAlgorithm::EcdsaP256),
            "ED25519" | "15" => Ok(KeyAlgorithm::Ed25519),
            _ => Err(DnssecError::Algorithm(s.trim().to_owned())),
        }
    }
}

/// A zone's private key: what a Secret holds. Its `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct ZoneKey {
    algorithm: KeyAlgorithm,
    pkcs8: Vec<u8>,
}

impl fmt::Debug for ZoneKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZoneKey")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

impl ZoneKey {
    /// A new random key.
    pub fn generate(algorithm: KeyAlgorithm) -> Result<ZoneKey, DnssecError> {
        let rng = SystemRandom::new();
        let pkcs8 = match algorithm {
            KeyAlgorithm::EcdsaP256 => EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng),
            KeyAlgorithm::Ed25519 => Ed25519KeyPair::generate_pkcs8(&rng),
        }
        .map_err(|_| DnssecError::Generate(algorithm))?;
        Ok(ZoneKey {
            algorithm,
            pkcs8: pkcs8.as_ref().to_vec(),
        })
    }

    /// A key read back from its PKCS #8 bytes; fails when they are not a key of `algorithm`.
    pub fn from_pkcs8(algorithm: KeyAlgorithm, pkcs8: &[u8]) -> Result<ZoneKey, DnssecError> {
        let key = ZoneKey {
            algorithm,
            pkcs8: pkcs8.to_vec(),
        };
        key.signing_key()?;
        Ok(key)
    }

    /// The key's algorithm.
    pub fn algorithm(&self) -> KeyAlgorithm {
        self.algorithm
    }

    /// The private key in PKCS #8 (DER), for keeping.
    pub fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// The key as hickory signs with it.
    pub(crate) fn signing_key(&self) -> Result<Box<dyn SigningKey>, DnssecError> {
        let invalid = |_| DnssecError::Key(self.algorithm);
        Ok(match self.algorithm {
            KeyAlgorithm::EcdsaP256 => {
                let pair =
                    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &self.pkcs8, &SystemRandom::new())
                        .map_err(invalid)?;
                Box::new(EcdsaSigningKey::from_ecdsa(pair, Algorithm::ECDSAP256SHA256))
            }
            KeyAlgorithm::Ed25519 => {
                let pair = Ed25519KeyPair::from_pkcs8(&self.pkcs8).map_err(invalid)?;
                Box::new(Ed25519SigningKey::from_ed25519(pair))
            }
        })
    }

    /// The DNSKEY the zone publishes: zone key and secure entry point (flags 257), a CSK.
    pub fn dnskey(&self) -> Result<DNSKEY, DnssecError> {
        let public = self.signing_key()?.to_public_key().map_err(DnssecError::Dnssec)?;
        debug_assert_eq!(public.algorithm(), self.algorithm.algorithm());
        Ok(DNSKEY::from_key(&public))
    }

    /// The key tag of its DNSKEY (RFC 4034 Appendix B): how logs and RRSIGs name the key.
    pub fn key_tag(&self) -> Result<u16, DnssecError> {
        self.dnskey()?.calculate_key_tag().map_err(DnssecError::Proto)
    }

    /// The DS record the parent zone holds for `zone` (SHA-256, digest type 2).
    pub fn ds(&self, zone: &Name) -> Result<DS, DnssecError> {
        let dnskey = self.dnskey()?;
        let digest = dnskey.to_digest(zone, DigestType::SHA256).map_err(DnssecError::Proto)?;
        Ok(DS::new(
            dnskey.calculate_key_tag().map_err(DnssecError::Proto)?,
            self.algorithm.algorithm(),
            DigestType::SHA256,
            digest.as_ref().to_vec(),
        ))
    }

    /// The CDS record (RFC 7344): the DS, published by the child for a parent that automates.
    pub fn cds(&self, zone: &Name) -> Result<CDS, DnssecError> {
        let ds = self.ds(zone)?;
        Ok(CDS::new(
            ds.key_tag(),
            Some(ds.algorithm()),
            ds.digest_type(),
            ds.digest().to_vec(),
        ))
    }

    /// The CDNSKEY record (RFC 7344): the DNSKEY again, for parents that compute the DS themselves.
    pub fn cdnskey(&self) -> Result<CDNSKEY, DnssecError> {
        let dnskey = self.dnskey()?;
        Ok(CDNSKEY::with_flags(
            dnskey.flags(),
            Some(self.algorithm.algorithm()),
            dnskey.public_key().public_bytes().to_vec(),
        ))
    }

    /// The DS as a zone file line for the parent, e.g. `example.org. IN DS 12345 13 2 ABCD…`.
    pub fn ds_line(&self, zone: &Name) -> Result<String, DnssecError> {
        let ds = self.ds(zone)?;
        Ok(format!("{} IN DS {}", zone.to_ascii(), ds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_reads_back_from_its_bytes_and_its_ds_matches_its_dnskey() {
        for algorithm in [KeyAlgorithm::EcdsaP256, KeyAlgorithm::Ed25519] {
            let key = ZoneKey::generate(algorithm).expect("generates");
            let again = ZoneKey::from_pkcs8(algorithm, key.pkcs8()).expect("reads back");
            assert_eq!(again.dnskey().expect("dnskey"), key.dnskey().expect("dnskey"));
            let zone = Name::from_ascii("example.org.").expect("name");
            let dnskey = key.dnskey().expect("dnskey");
            assert!(dnskey.secure_entry_point() && dnskey.zone_key(), "a CSK: flags 257");
            assert!(key.ds(&zone).expect("ds").covers(&zone, &dnskey).expect("digest"));
            let line = key.ds_line(&zone).expect("line");
            assert!(line.starts_with("example.org. IN DS "), "{line}");
        }
    }

    #[test]
    fn the_wrong_bytes_or_algorithm_are_refused_and_debug_hides_the_key() {
        let key = ZoneKey::generate(KeyAlgorithm::Ed25519).expect("generates");
        assert!(ZoneKey::from_pkcs8(KeyAlgorithm::EcdsaP256, key.pkcs8()).is_err());
        assert!(ZoneKey::from_pkcs8(KeyAlgorithm::Ed25519, b"not a key").is_err());
        assert!(!format!("{key:?}").contains(&format!("{:?}", key.pkcs8())));
        assert_eq!("ed25519".parse::<KeyAlgorithm>().ok(), Some(KeyAlgorithm::Ed25519));
        assert_eq!("13".parse::<KeyAlgorithm>().ok(), Some(KeyAlgorithm::EcdsaP256));
        assert!("RSASHA1".parse::<KeyAlgorithm>().is_err());
    }
}
