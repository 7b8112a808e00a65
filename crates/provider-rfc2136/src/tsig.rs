//! TSIG (RFC 8945) signing and verification done here rather than through hickory's `TSigner`, for two
//! reasons: hickory implements only hmac-sha256/384/512 while external-dns users also have hmac-sha1 and
//! hmac-sha224 keys, and hickory turns a server's "bad signature" answer into an opaque protocol error,
//! while users need to be told plainly that their key was refused.
//!
//! The message encoding and the to-be-signed layouts come from hickory-proto; only the MACs are ours.

use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use hickory_proto::op::Message;
use hickory_proto::rr::Name;
use hickory_proto::rr::rdata::tsig::{TSIG, TsigAlgorithm, TsigError, make_tsig_record, message_tbs};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};

/// Default allowed clock difference between us and the server, as external-dns uses.
pub const FUDGE: u16 = 300;

/// The TSIG algorithms external-dns accepts for `--rfc2136-tsig-secret-alg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    HmacSha1,
    HmacSha224,
    HmacSha256,
    HmacSha384,
    HmacSha512,
}

impl Algorithm {
    pub const ALL: [Algorithm; 5] = [
        Algorithm::HmacSha1,
        Algorithm::HmacSha224,
        Algorithm::HmacSha256,
        Algorithm::HmacSha384,
        Algorithm::HmacSha512,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::HmacSha1 => "hmac-sha1",
            Algorithm::HmacSha224 => "hmac-sha224",
            Algorithm::HmacSha256 => "hmac-sha256",
            Algorithm::HmacSha384 => "hmac-sha384",
            Algorithm::HmacSha512 => "hmac-sha512",
        }
    }

    fn hickory(self) -> TsigAlgorithm {
        match self {
            Algorithm::HmacSha1 => TsigAlgorithm::HmacSha1,
            Algorithm::HmacSha224 => TsigAlgorithm::HmacSha224,
            Algorithm::HmacSha256 => TsigAlgorithm::HmacSha256,
            Algorithm::HmacSha384 => TsigAlgorithm::HmacSha384,
            Algorithm::HmacSha512 => TsigAlgorithm::HmacSha512,
        }
    }

    /// Full MAC length in bytes; shorter (truncated) MACs in responses are refused.
    fn mac_len(self) -> usize {
        match self {
            Algorithm::HmacSha1 => 20,
            Algorithm::HmacSha224 => 28,
            Algorithm::HmacSha256 => 32,
            Algorithm::HmacSha384 => 48,
            Algorithm::HmacSha512 => 64,
        }
    }

    pub fn mac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        use ring::hmac;
        let ring_alg = match self {
            Algorithm::HmacSha1 => hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
            Algorithm::HmacSha256 => hmac::HMAC_SHA256,
            Algorithm::HmacSha384 => hmac::HMAC_SHA384,
            Algorithm::HmacSha512 => hmac::HMAC_SHA512,
            Algorithm::HmacSha224 => return hmac_sha224(key, data),
        };
        hmac::sign(&hmac::Key::new(ring_alg, key), data).as_ref().to_vec()
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Algorithm {
    type Err = String;

    /// Names as BIND writes them (`hmac-sha256`); case-insensitive, a trailing dot tolerated.
    fn from_str(s: &str) -> Result<Self, String> {
        let lower = s.trim_end_matches('.').to_ascii_lowercase();
        Algorithm::ALL.into_iter().find(|a| a.as_str() == lower).ok_or_else(|| {
            let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.as_str()).collect();
            if lower == "hmac-md5" || lower == "hmac-md5.sig-alg.reg.int" {
                format!(
                    "{s} is not supported TSIG algorithm: hmac-md5 is insecure; use one of {}",
                    names.join(", ")
                )
            } else {
                format!(
                    "{s:?} is not supported TSIG algorithm (use one of {})",
                    names.join(", ")
                )
            }
        })
    }
}

/// HMAC (RFC 2104) over SHA-224, which ring does not offer.
fn hmac_sha224(key: &[u8], data: &[u8]) -> Vec<u8> {
    use sha2::{Digest, Sha224};
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        let h = Sha224::digest(key);
        k[..h.len()].copy_from_slice(&h);
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha224::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(data);
    let mut outer = Sha224::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().to_vec()
}

/// Constant-time comparison, so a forged response cannot learn the MAC byte by byte.
fn same_mac(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A TSIG key: name, algorithm and secret. The secret never appears in `Debug` output.
#[derive(Clone)]
pub struct Key {
    name: Name,
    algorithm: Algorithm,
    secret: Vec<u8>,
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("name", &self.name)
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

impl Key {
    pub fn new(name: &str, algorithm: Algorithm, secret: Vec<u8>) -> Result<Key, String> {
        let mut n = Name::from_ascii(name).map_err(|e| format!("invalid TSIG key name {name:?}: {e}"))?;
        n.set_fqdn(true);
        Ok(Key {
            name: n.to_lowercase(),
            algorithm,
            secret,
        })
    }

    /// The key name as the user wrote it, for messages.
    pub fn name(&self) -> String {
        self.name.to_ascii().trim_end_matches('.').to_string()
    }

    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// Sign `message` (which must not be changed afterwards) and return its wire form and the request MAC
    /// that the response's MAC chains from.
    pub fn sign(&self, message: &mut Message, now: u64) -> Result<(Vec<u8>, Vec<u8>), String> {
        let stub = TSIG::new(
            self.algorithm.hickory(),
            now,
            FUDGE,
            Vec::new(),
            message.metadata.id,
            None,
            Vec::new(),
        );
        let tbs = message_tbs(&*message, &stub, &self.name).map_err(|e| e.to_string())?;
        let mac = self.algorithm.mac(&self.secret, &tbs);
        message.set_signature(Box::new(make_tsig_record(self.name.clone(), stub.set_mac(mac.clone()))));
        let wire = message.to_vec().map_err(|e| e.to_string())?;
        Ok((wire, mac))
    }
}

/// Why a signed exchange failed on the TSIG level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TsigFailure {
    /// The server refused our signature (BADSIG, BADKEY, BADTIME...): the key, its name, its algorithm or the
    /// clock is wrong.
    Rejected(String),
    /// The server's answer is not properly signed with our key: not trusted.
    BadResponse(String),
}

/// Verifies the TSIG of the answers to one signed request: a single response, or the chain of messages of
/// a zone transfer, where a server may leave up to 99 messages in a row unsigned (RFC 8945 §5.3.1).
pub struct Verifier<'k> {
    key: &'k Key,
    previous_mac: Vec<u8>,
    unsigned: Vec<u8>,
    first: bool,
    now: u64,
}

impl<'k> Verifier<'k> {
    pub fn new(key: &'k Key, request_mac: Vec<u8>, now: u64) -> Self {
        Verifier {
            key,
            previous_mac: request_mac,
            unsigned: Vec::new(),
            first: true,
            now,
        }
    }

    /// Check one received message (its raw bytes). Returns whether it carried a signature; unsigned ones
    /// are covered by the next signed message, and the caller must make sure the last one was signed.
    pub fn check(&mut self, wire: &[u8]) -> Result<bool, TsigFailure> {
        let Some(tsig_record) = read_tsig(wire)? else {
            if self.first {
                return Err(TsigFailure::BadResponse(
                    "the first answer to a signed request is not signed".into(),
                ));
            }
            self.unsigned.extend_from_slice(wire);
            return Ok(false);
        };
        let tsig = &tsig_record.data;
        if let Some(err) = tsig.error {
            return Err(TsigFailure::Rejected(describe_tsig_error(err)));
        }
        if tsig_record.name.to_lowercase() != self.key.name || tsig.algorithm != self.key.algorithm.hickory() {
            return Err(TsigFailure::BadResponse(format!(
                "the answer is signed with key {} ({}) instead of ours",
                tsig_record.name, tsig.algorithm
            )));
        }
        if tsig.mac.len() != self.key.algorithm.mac_len() {
            return Err(TsigFailure::BadResponse(format!(
                "the answer's MAC has {} bytes",
                tsig.mac.len()
            )));
        }
        let (body, _) = hickory_proto::rr::rdata::tsig::signed_bitmessage_to_buf(wire, None, self.first)
            .map_err(|e| TsigFailure::BadResponse(format!("cannot read the answer's signature: {e}")))?;
        let mut tbs = Vec::with_capacity(2 + self.previous_mac.len() + self.unsigned.len() + body.len());
        tbs.extend_from_slice(&(self.previous_mac.len() as u16).to_be_bytes());
        tbs.extend_from_slice(&self.previous_mac);
        tbs.extend_from_slice(&self.unsigned);
        tbs.extend_from_slice(&body);
        let expected = self.key.algorithm.mac(&self.key.secret, &tbs);
        if !same_mac(&expected, &tsig.mac) {
            return Err(TsigFailure::BadResponse(
                "the answer's signature does not match our key".into(),
            ));
        }
        if tsig.time.abs_diff(self.now) > u64::from(tsig.fudge.max(FUDGE)) {
            return Err(TsigFailure::BadResponse(format!(
                "the answer was signed at {} but our clock says {} (more than {}s apart)",
                tsig.time, self.now, FUDGE
            )));
        }
        self.previous_mac = tsig.mac.clone();
        self.unsigned.clear();
        self.first = false;
        Ok(true)
    }
}

fn describe_tsig_error(err: TsigError) -> String {
    match err {
        TsigError::BadSig => "BADSIG: the server's copy of the key has another secret or algorithm".into(),
        TsigError::BadKey => "BADKEY: the server does not know this key name with this algorithm".into(),
        TsigError::BadTime => "BADTIME: our clock and the server's differ by more than the allowed 300s".into(),
        TsigError::BadTrunc => "BADTRUNC: the server refused a truncated MAC".into(),
        TsigError::Unknown(code) => format!("TSIG error {code}"),
    }
}

/// The TSIG record of a message, if it has one (it is always the last additional record).
fn read_tsig(wire: &[u8]) -> Result<Option<Box<hickory_proto::rr::Record<TSIG>>>, TsigFailure> {
    let mut decoder = BinDecoder::new(wire);
    let message =
        Message::read(&mut decoder).map_err(|e| TsigFailure::BadResponse(format!("undecodable answer: {e}")))?;
    Ok(message.signature)
}

/// Seconds since the epoch, for TSIG's time-signed field.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    // RFC 4231 test case 2 ("Jefe" / "what do ya want for nothing?").
    #[test]
    fn hmac_sha224_matches_rfc4231_vectors() {
        let mac = Algorithm::HmacSha224.mac(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(hex(&mac), "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44");
        // Test case 6: a key longer than the block size is hashed first.
        let mac = Algorithm::HmacSha224.mac(&[0xaa; 131], b"Test Using Larger Than Block-Size Key - Hash Key First");
        assert_eq!(hex(&mac), "95e9a0db962095adaebe9b2d6f0dbce2d499f112f2d2b7273fa6870e");
    }

    #[test]
    fn every_external_dns_algorithm_gives_a_full_length_mac() {
        for alg in Algorithm::ALL {
            assert_eq!(alg.mac(b"k", b"data").len(), alg.mac_len(), "{alg}");
        }
        assert_eq!(
            hex(&Algorithm::HmacSha256.mac(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn algorithm_names_parse_like_bind_writes_them() {
        assert_eq!("HMAC-SHA512".parse::<Algorithm>(), Ok(Algorithm::HmacSha512));
        assert_eq!("hmac-sha1.".parse::<Algorithm>(), Ok(Algorithm::HmacSha1));
        let md5 = "hmac-md5".parse::<Algorithm>().err().unwrap_or_default();
        assert!(md5.contains("not supported") && md5.contains("hmac-sha256"), "{md5}");
        assert!("".parse::<Algorithm>().is_err());
    }

    #[test]
    fn key_debug_output_hides_the_secret() {
        let key = Key::new("k", Algorithm::HmacSha256, b"super-secret".to_vec()).ok();
        let shown = format!("{key:?}");
        assert!(!shown.contains("super") && !shown.contains("115"), "{shown}");
    }

    #[test]
    fn a_signed_request_verifies_as_its_own_first_answer_shape() {
        // Sign a message, then check a response signed the way a server does (request MAC chained in).
        let key = Key::new("externaldns-key", Algorithm::HmacSha224, b"0123456789".to_vec()).ok();
        let Some(key) = key else { panic!("key") };
        let now = 1_700_000_000;
        let mut request = Message::query();
        let Ok((_, request_mac)) = key.sign(&mut request, now) else {
            panic!("sign")
        };

        let mut response = Message::response(request.metadata.id, hickory_proto::op::OpCode::Query);
        let stub = TSIG::new(
            TsigAlgorithm::HmacSha224,
            now,
            FUDGE,
            Vec::new(),
            request.metadata.id,
            None,
            vec![],
        );
        let Ok(body) = message_tbs(&response, &stub, &key.name) else {
            panic!("tbs")
        };
        let mut tbs = (request_mac.len() as u16).to_be_bytes().to_vec();
        tbs.extend_from_slice(&request_mac);
        tbs.extend_from_slice(&body);
        let mac = Algorithm::HmacSha224.mac(&key.secret, &tbs);
        response.set_signature(Box::new(make_tsig_record(key.name.clone(), stub.set_mac(mac))));
        let Ok(wire) = response.to_vec() else { panic!("encode") };

        let mut verifier = Verifier::new(&key, request_mac.clone(), now);
        assert_eq!(verifier.check(&wire), Ok(true));

        // The same answer checked against another request MAC is refused.
        let mut wrong = Verifier::new(&key, vec![0; request_mac.len()], now);
        assert!(matches!(wrong.check(&wire), Err(TsigFailure::BadResponse(_))));
    }

    #[test]
    fn a_badsig_answer_is_reported_as_a_rejected_key() {
        let Ok(key) = Key::new("externaldns-key", Algorithm::HmacSha256, b"x".to_vec()) else {
            panic!("key")
        };
        let mut response = Message::response(7, hickory_proto::op::OpCode::Update);
        let tsig = TSIG::new(
            TsigAlgorithm::HmacSha256,
            5,
            FUDGE,
            vec![],
            7,
            Some(TsigError::BadSig),
            vec![],
        );
        response.set_signature(Box::new(make_tsig_record(key.name.clone(), tsig)));
        let Ok(wire) = response.to_vec() else { panic!("encode") };
        let got = Verifier::new(&key, vec![1; 32], 5).check(&wire);
        assert!(
            matches!(&got, Err(TsigFailure::Rejected(m)) if m.contains("BADSIG")),
            "{got:?}"
        );
    }
}
