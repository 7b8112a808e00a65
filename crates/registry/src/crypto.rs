//! Encrypted TXT values (`--txt-encrypt-enabled`), in external-dns's wire format so either controller can
//! read the other's records: the plain label text is gzip-compressed (best compression), sealed with
//! AES-256-GCM under a 12-byte nonce, and written as standard base64 of `nonce ‖ ciphertext ‖ tag`.
//!
//! The nonce travels with the record (it is the value's first 12 bytes) and is kept in the endpoint's
//! `txt-encryption-nonce` label once read, so re-serialising an unchanged record gives the same value and the
//! plan sees no difference.

use std::fmt;
use std::io::{Read, Write};

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, aead};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

/// The GCM standard nonce size; external-dns uses it too.
pub const NONCE_LEN: usize = 12;

/// A 32-byte AES-256 key.
#[derive(Clone, PartialEq, Eq)]
pub struct AesKey([u8; 32]);

/// Never print key material.
impl fmt::Debug for AesKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AesKey(******)")
    }
}

/// Why a value could not be encrypted or decrypted; a record that does not decrypt is someone else's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CryptoError {
    /// `--txt-encrypt-aes-key` is not 32 bytes.
    #[error("the AES encryption key must be 32 bytes long, as plain text or standard base64 ({0} bytes given)")]
    KeyLength(usize),
    /// A nonce that cannot be used.
    #[error("the encryption nonce {0:?} is not base64 of 12 bytes")]
    BadNonce(String),
    /// The record is not base64.
    #[error("the encrypted value is not standard base64")]
    Base64,
    /// The record is shorter than a nonce.
    #[error("the encrypted value is too short to hold a nonce")]
    TooShort,
    /// Another key wrote it, or it was changed.
    #[error("the value does not decrypt with this key")]
    Open,
    /// The cipher refused to encrypt.
    #[error("encryption failed")]
    Seal,
    /// Compressing the plain text failed.
    #[error("compression failed: {0}")]
    Gzip(String),
    /// The system has no randomness to give.
    #[error("could not get random bytes for a nonce: {0}")]
    Random(String),
}

impl AesKey {
    /// external-dns's key rule: exactly 32 bytes are used as they are; anything else must be standard base64
    /// of 32 bytes.
    pub fn parse(s: &str) -> Result<AesKey, CryptoError> {
        if let Ok(raw) = <[u8; 32]>::try_from(s.as_bytes()) {
            return Ok(AesKey(raw));
        }
        let decoded = STANDARD.decode(s).map_err(|_| CryptoError::KeyLength(s.len()))?;
        <[u8; 32]>::try_from(decoded.as_slice())
            .map(AesKey)
            .map_err(|_| CryptoError::KeyLength(decoded.len()))
    }

    /// A key from raw bytes (tests; flags go through parsing).
    pub fn from_bytes(bytes: [u8; 32]) -> AesKey {
        AesKey(bytes)
    }

    fn cipher(&self) -> Aes256Gcm {
        // A 32-byte slice is always a valid AES-256 key, so this never falls back; it keeps the code free of
        // panicking conversions all the same.
        Aes256Gcm::new_from_slice(&self.0).unwrap_or_else(|_| Aes256Gcm::new(&aead::Key::<Aes256Gcm>::default()))
    }
}

/// A fresh random nonce, as the base64 text stored in the `txt-encryption-nonce` label.
pub fn generate_nonce() -> Result<String, CryptoError> {
    let mut n = [0u8; NONCE_LEN];
    getrandom::fill(&mut n).map_err(|e| CryptoError::Random(e.to_string()))?;
    Ok(STANDARD.encode(n))
}

/// Encrypt `text` under `key` with the nonce given as base64 (the label's form). The result is unquoted.
pub fn encrypt(text: &str, key: &AesKey, nonce_b64: &str) -> Result<String, CryptoError> {
    let nonce_bytes = STANDARD
        .decode(nonce_b64)
        .map_err(|_| CryptoError::BadNonce(nonce_b64.to_string()))?;
    let nonce = aead::Nonce::<Aes256Gcm>::try_from(nonce_bytes.as_slice())
        .map_err(|_| CryptoError::BadNonce(nonce_b64.to_string()))?;
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(text.as_bytes())
        .map_err(|e| CryptoError::Gzip(e.to_string()))?;
    let compressed = gz.finish().map_err(|e| CryptoError::Gzip(e.to_string()))?;
    let sealed = key
        .cipher()
        .encrypt(&nonce, compressed.as_slice())
        .map_err(|_| CryptoError::Seal)?;
    let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
    out.extend_from_slice(&nonce_bytes);
    out.extend_from_slice(&sealed);
    Ok(STANDARD.encode(out))
}

/// Decrypt an (unquoted) value; returns the plain text and the nonce as base64.
pub fn decrypt(text: &str, key: &AesKey) -> Result<(String, String), CryptoError> {
    let data = STANDARD.decode(text).map_err(|_| CryptoError::Base64)?;
    if data.len() <= NONCE_LEN {
        return Err(CryptoError::TooShort);
    }
    let (nonce_bytes, sealed) = data.split_at(NONCE_LEN);
    let nonce = aead::Nonce::<Aes256Gcm>::try_from(nonce_bytes).map_err(|_| CryptoError::TooShort)?;
    let compressed = key.cipher().decrypt(&nonce, sealed).map_err(|_| CryptoError::Open)?;
    let mut plain = String::new();
    MultiGzDecoder::new(compressed.as_slice())
        .read_to_string(&mut plain)
        .map_err(|e| CryptoError::Gzip(e.to_string()))?;
    Ok((plain, STANDARD.encode(nonce_bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "01234567890123456789012345678901";
    const PLAIN: &str = "heritage=external-dns,external-dns/owner=default,external-dns/resource=service/default/nginx";

    fn key() -> AesKey {
        AesKey::parse(KEY).unwrap_or_else(|_| AesKey::from_bytes([0; 32]))
    }

    #[test]
    fn a_32_byte_key_is_used_raw() {
        assert_eq!(AesKey::parse(KEY), Ok(AesKey(*b"01234567890123456789012345678901")));
    }

    #[test]
    fn a_base64_key_is_decoded() {
        let b64 = STANDARD.encode([7u8; 32]);
        assert_eq!(AesKey::parse(&b64), Ok(AesKey([7; 32])));
    }

    #[test]
    fn keys_of_other_lengths_are_rejected() {
        assert_eq!(AesKey::parse("short"), Err(CryptoError::KeyLength(5)));
        assert_eq!(
            AesKey::parse(&STANDARD.encode([1u8; 16])),
            Err(CryptoError::KeyLength(16))
        );
        // URL-safe base64 is not accepted (external-dns decodes standard base64 only).
        let url_safe = base64::engine::general_purpose::URL_SAFE.encode([0xfbu8; 32]);
        assert!(AesKey::parse(&url_safe).is_err());
    }

    #[test]
    fn the_key_is_never_printed() {
        assert_eq!(format!("{:?}", key()), "AesKey(******)");
    }

    #[test]
    fn encryption_round_trips_and_returns_the_nonce() -> Result<(), CryptoError> {
        let nonce = generate_nonce()?;
        let sealed = encrypt(PLAIN, &key(), &nonce)?;
        assert_eq!(decrypt(&sealed, &key())?, (PLAIN.to_string(), nonce));
        Ok(())
    }

    #[test]
    fn the_same_nonce_gives_the_same_value() -> Result<(), CryptoError> {
        let nonce = STANDARD.encode([9u8; NONCE_LEN]);
        assert_eq!(encrypt(PLAIN, &key(), &nonce)?, encrypt(PLAIN, &key(), &nonce)?);
        Ok(())
    }

    /// The wire layout: base64(nonce ‖ AES-GCM(gzip(text)) ‖ 16-byte tag), the gzip member with external-dns's
    /// header (Go's writer: no mtime, best-compression flag, unknown OS).
    #[test]
    fn encrypted_values_have_the_external_dns_layout() -> Result<(), CryptoError> {
        let nonce = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
        let sealed = encrypt(PLAIN, &key(), &STANDARD.encode(nonce))?;
        let raw = STANDARD.decode(&sealed).map_err(|_| CryptoError::Base64)?;
        assert_eq!(&raw[..NONCE_LEN], &nonce);
        let cipher = key().cipher();
        let n = aead::Nonce::<Aes256Gcm>::try_from(&raw[..NONCE_LEN]).map_err(|_| CryptoError::TooShort)?;
        let gz = cipher.decrypt(&n, &raw[NONCE_LEN..]).map_err(|_| CryptoError::Open)?;
        assert_eq!(raw.len(), NONCE_LEN + gz.len() + 16);
        assert_eq!(&gz[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255]);
        assert_eq!(sealed.len(), raw.len().div_ceil(3) * 4);
        Ok(())
    }

    /// A value built by hand the way external-dns builds it (gzip, then AES-256-GCM with a fixed key and
    /// nonce, then base64) decrypts to the label text.
    #[test]
    fn a_hand_built_external_dns_value_decrypts() -> Result<(), CryptoError> {
        let nonce = [0xabu8; NONCE_LEN];
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(PLAIN.as_bytes())
            .map_err(|e| CryptoError::Gzip(e.to_string()))?;
        let compressed = gz.finish().map_err(|e| CryptoError::Gzip(e.to_string()))?;
        let n = aead::Nonce::<Aes256Gcm>::try_from(&nonce[..]).map_err(|_| CryptoError::TooShort)?;
        let sealed = key()
            .cipher()
            .encrypt(&n, compressed.as_slice())
            .map_err(|_| CryptoError::Seal)?;
        let value = STANDARD.encode([&nonce[..], &sealed].concat());
        let (plain, nonce_b64) = decrypt(&value, &key())?;
        assert_eq!(plain, PLAIN);
        assert_eq!(nonce_b64, "q6urq6urq6urq6ur");
        Ok(())
    }

    /// Produced outside Rust (Python's `gzip` with mtime 0 and `cryptography`'s AES-GCM, the same steps
    /// external-dns's Go code takes) for key `KEY` and nonce 0x07 × 12.
    const FOREIGN_VECTOR: &str = "BwcHBwcHBwcHBwcHYslmUunnEcXTI8wFqBUSGa11hQ25URRRJxLg2PYPPuiBAt/Y4zYgiDEOLrs7UjbGcCVHWsClpVQaW/5AS9EXxe3nYfluzHoOmlxB+VUYg3Z3aByIQQ+1RFW4d3bg88429kM=";

    #[test]
    fn a_value_encrypted_by_another_implementation_decrypts() -> Result<(), CryptoError> {
        let (plain, nonce) = decrypt(FOREIGN_VECTOR, &key())?;
        assert_eq!(
            plain,
            "heritage=external-dns,external-dns/owner=team-a,external-dns/resource=httproute/web/shop"
        );
        assert_eq!(nonce, "BwcHBwcHBwcHBwcH");
        Ok(())
    }

    /// Our value for a fixed nonce; Python's `cryptography` + `gzip` decrypt it to `PLAIN` (checked when the
    /// vector was made). Pinned so a change of compressor or layout is noticed.
    const OUR_VECTOR: &str = "QkJCQkJCQkJCQkJCEO2Z95T7jcIYqMJ/qqAM/CBe9z3IP7GF51YbYELjDGdSZbsPENOS005ve+RzlGFaxG+J0S6erDqbxe8wRp6NvYlkm3olVz5xHfROw5wLRM13SlwvO6T7WSRLbhsS1QGe+QjFbg==";

    #[test]
    fn our_encryption_vector_decrypts_and_is_stable() -> Result<(), CryptoError> {
        assert_eq!(decrypt(OUR_VECTOR, &key())?.0, PLAIN);
        assert_eq!(
            encrypt(PLAIN, &key(), &STANDARD.encode([0x42u8; NONCE_LEN]))?,
            OUR_VECTOR
        );
        Ok(())
    }

    #[test]
    fn decryption_failures_are_errors() -> Result<(), CryptoError> {
        assert_eq!(decrypt("not base64!", &key()), Err(CryptoError::Base64));
        assert_eq!(decrypt(&STANDARD.encode([0u8; 12]), &key()), Err(CryptoError::TooShort));
        let sealed = encrypt(PLAIN, &key(), &generate_nonce()?)?;
        assert_eq!(decrypt(&sealed, &AesKey([1; 32])), Err(CryptoError::Open));
        Ok(())
    }

    #[test]
    fn nonces_are_12_random_bytes_in_base64() -> Result<(), CryptoError> {
        let (a, b) = (generate_nonce()?, generate_nonce()?);
        assert_eq!(a.len(), 16);
        assert_ne!(a, b);
        assert!(encrypt(PLAIN, &key(), "AAAA").is_err());
        Ok(())
    }
}
