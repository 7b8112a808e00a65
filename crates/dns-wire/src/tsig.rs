//! TSIG (RFC 8945) signing and verification done here rather than through hickory's `TSigner`, for two
//! reasons: hickory implements only hmac-sha256/384/512 while external-dns users also have hmac-sha1 and
//! hmac-sha224 keys, and hickory turns a server's "bad signature" answer into an opaque protocol error,
//! while users need to be told plainly that their key was refused.
//!
//! The message encoding and the to-be-signed layouts come from hickory-proto; the MACs from RustCrypto's
//! `hmac`, whose `verify_slice` compares in constant time so a forged answer cannot learn the MAC byte by
//! byte.

use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use hickory_proto::ProtoError;
use hickory_proto::op::Message;
use hickory_proto::rr::Name;
use hickory_proto::rr::rdata::tsig::{TSIG, TsigAlgorithm, TsigError as TsigRcode, make_tsig_record, message_tbs};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder};
use hmac::digest::InvalidLength;
use hmac::{Hmac, Mac};

/// Default allowed clock difference between us and the server, as external-dns uses.
pub const FUDGE: u16 = 300;

/// The TSIG algorithms external-dns accepts for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// `hmac-sha1`.
    HmacSha1,
    /// `hmac-sha224`.
    HmacSha224,
    /// `hmac-sha256`, what `tsig-keygen` makes by default.
    HmacSha256,
    /// `hmac-sha384`.
    HmacSha384,
    /// `hmac-sha512`.
    HmacSha512,
}

impl Algorithm {
    /// Every supported algorithm, weakest first (the order error messages list them in).
    pub const ALL: [Algorithm; 5] = [
        Algorithm::HmacSha1,
        Algorithm::HmacSha224,
        Algorithm::HmacSha256,
        Algorithm::HmacSha384,
        Algorithm::HmacSha512,
    ];

    /// The algorithm's name in `--rfc2136-tsig-secret-alg` and on the wire (without the trailing dot).
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
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Algorithm {
    type Err = TsigError;

    /// Names as BIND writes them (`hmac-sha256`); case-insensitive, a trailing dot tolerated.
    fn from_str(s: &str) -> Result<Self, TsigError> {
        let lower = s.trim_end_matches('.').to_ascii_lowercase();
        Algorithm::ALL.into_iter().find(|a| a.as_str() == lower).ok_or_else(|| {
            let name = s.to_string();
            if lower == "hmac-md5" || lower == "hmac-md5.sig-alg.reg.int" {
                TsigError::InsecureAlgorithm { name }
            } else {
                TsigError::UnknownAlgorithm { name }
            }
        })
    }
}

/// The algorithm names, for the messages that list what is accepted.
struct Supported;

impl fmt::Display for Supported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in Algorithm::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(a.as_str())?;
        }
        Ok(())
    }
}

/// Why a TSIG key cannot be built or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TsigError {
    /// `hmac-md5`, which external-dns accepted but which is broken; refused with the alternatives.
    #[error(
        "{name} is not supported TSIG algorithm: hmac-md5 is insecure; use one of {}",
        Supported
    )]
    InsecureAlgorithm {
        /// The algorithm as given.
        name: String,
    },
    /// The algorithm is not one of [`Algorithm::ALL`].
    #[error("{name:?} is not supported TSIG algorithm (use one of {})", Supported)]
    UnknownAlgorithm {
        /// The algorithm as given.
        name: String,
    },
    /// The key name is not a DNS name.
    #[error("invalid TSIG key name {name:?}: {source}")]
    KeyName {
        /// The key name as given.
        name: String,
        /// The DNS library's reason.
        #[source]
        source: ProtoError,
    },
    /// HMAC takes keys of any length, so this is not expected; it is typed rather than unwrapped.
    #[error("the secret of TSIG key {name:?} cannot key {algorithm}: {source}")]
    Secret {
        /// The key name.
        name: String,
        /// The key's algorithm.
        algorithm: Algorithm,
        /// The HMAC library's reason.
        #[source]
        source: InvalidLength,
    },
    /// The message to sign cannot be encoded (a name or record the wire format cannot hold).
    #[error("cannot sign a message with TSIG key {name:?}: {source}")]
    Sign {
        /// The key name.
        name: String,
        /// The DNS library's reason.
        #[source]
        source: ProtoError,
    },
}

/// The HMAC state keyed once with the secret: signing and verifying clone it instead of keying again.
#[derive(Clone)]
enum Keyed {
    Sha1(Hmac<sha1::Sha1>),
    Sha224(Hmac<sha2::Sha224>),
    Sha256(Hmac<sha2::Sha256>),
    Sha384(Hmac<sha2::Sha384>),
    Sha512(Hmac<sha2::Sha512>),
}

impl Keyed {
    fn new(algorithm: Algorithm, secret: &[u8]) -> Result<Keyed, InvalidLength> {
        Ok(match algorithm {
            Algorithm::HmacSha1 => Keyed::Sha1(Mac::new_from_slice(secret)?),
            Algorithm::HmacSha224 => Keyed::Sha224(Mac::new_from_slice(secret)?),
            Algorithm::HmacSha256 => Keyed::Sha256(Mac::new_from_slice(secret)?),
            Algorithm::HmacSha384 => Keyed::Sha384(Mac::new_from_slice(secret)?),
            Algorithm::HmacSha512 => Keyed::Sha512(Mac::new_from_slice(secret)?),
        })
    }

    fn mac(&self, data: &[u8]) -> Vec<u8> {
        fn run<M: Mac + Clone>(m: &M, data: &[u8]) -> Vec<u8> {
            let mut m = m.clone();
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }
        match self {
            Keyed::Sha1(m) => run(m, data),
            Keyed::Sha224(m) => run(m, data),
            Keyed::Sha256(m) => run(m, data),
            Keyed::Sha384(m) => run(m, data),
            Keyed::Sha512(m) => run(m, data),
        }
    }

    /// Whether `mac` is the full MAC of `data`, compared in constant time.
    fn verify(&self, data: &[u8], mac: &[u8]) -> bool {
        fn run<M: Mac + Clone>(m: &M, data: &[u8], mac: &[u8]) -> bool {
            let mut m = m.clone();
            m.update(data);
            m.verify_slice(mac).is_ok()
        }
        match self {
            Keyed::Sha1(m) => run(m, data, mac),
            Keyed::Sha224(m) => run(m, data, mac),
            Keyed::Sha256(m) => run(m, data, mac),
            Keyed::Sha384(m) => run(m, data, mac),
            Keyed::Sha512(m) => run(m, data, mac),
        }
    }
}

/// A TSIG key: name, algorithm and the HMAC keyed with its secret. The secret never appears in `Debug`
/// output.
#[derive(Clone)]
pub struct Key {
    name: Name,
    algorithm: Algorithm,
    keyed: Keyed,
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
    /// A key named `name` (case-insensitive, trailing dot optional) with the decoded `secret` bytes.
    pub fn new(name: &str, algorithm: Algorithm, secret: &[u8]) -> Result<Key, TsigError> {
        let mut n = Name::from_ascii(name).map_err(|source| TsigError::KeyName {
            name: name.to_string(),
            source,
        })?;
        n.set_fqdn(true);
        let keyed = Keyed::new(algorithm, secret).map_err(|source| TsigError::Secret {
            name: name.to_string(),
            algorithm,
            source,
        })?;
        Ok(Key {
            name: n.to_lowercase(),
            algorithm,
            keyed,
        })
    }

    /// The key name as the user wrote it, for messages.
    pub fn name(&self) -> String {
        self.name.to_ascii().trim_end_matches('.').to_string()
    }

    /// The key's HMAC algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// Sign `message` (which must not be changed afterwards) and return its wire form and the request MAC
    /// that the response's MAC chains from.
    pub fn sign(&self, message: &mut Message, now: u64) -> Result<(Vec<u8>, Vec<u8>), TsigError> {
        let failed = |source| TsigError::Sign {
            name: self.name(),
            source,
        };
        let stub = TSIG::new(
            self.algorithm.hickory(),
            now,
            FUDGE,
            Vec::new(),
            message.metadata.id,
            None,
            Vec::new(),
        );
        let tbs = message_tbs(&*message, &stub, &self.name).map_err(failed)?;
        let mac = self.keyed.mac(&tbs);
        message.set_signature(Box::new(make_tsig_record(self.name.clone(), stub.set_mac(mac.clone()))));
        let wire = message.to_vec().map_err(failed)?;
        Ok((wire, mac))
    }
}

/// Why a signed exchange failed on the TSIG level. Exhaustive: a client handles both outcomes.
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
    /// A verifier for the answers to a request signed with `key`, whose MAC [`Key::sign`] returned; `now` is
    /// the Unix time in seconds the answers' time stamps are checked against (within [`FUDGE`]).
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
        if !self.key.keyed.verify(&tbs, &tsig.mac) {
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

fn describe_tsig_error(err: TsigRcode) -> String {
    match err {
        TsigRcode::BadSig => "BADSIG: the server's copy of the key has another secret or algorithm".into(),
        TsigRcode::BadKey => "BADKEY: the server does not know this key name with this algorithm".into(),
        TsigRcode::BadTime => "BADTIME: our clock and the server's differ by more than the allowed 300s".into(),
        TsigRcode::BadTrunc => "BADTRUNC: the server refused a truncated MAC".into(),
        TsigRcode::Unknown(code) => format!("TSIG error {code}"),
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

    fn mac(algorithm: Algorithm, key: &[u8], data: &[u8]) -> Vec<u8> {
        match Keyed::new(algorithm, key) {
            Ok(k) => k.mac(data),
            Err(e) => panic!("{algorithm}: {e}"),
        }
    }

    const JEFE: &[u8] = b"what do ya want for nothing?";

    // RFC 2202 and RFC 4231 test case 2 ("Jefe" / "what do ya want for nothing?").
    #[test]
    fn every_algorithm_matches_the_rfc_vectors() {
        let expected = [
            (Algorithm::HmacSha1, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"),
            (
                Algorithm::HmacSha224,
                "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44",
            ),
            (
                Algorithm::HmacSha256,
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                Algorithm::HmacSha384,
                "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e\
                 8e2240ca5e69e2c78b3239ecfab21649",
            ),
            (
                Algorithm::HmacSha512,
                "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554\
                 9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
            ),
        ];
        for (alg, want) in expected {
            let got = mac(alg, b"Jefe", JEFE);
            assert_eq!(got.len(), alg.mac_len(), "{alg}");
            assert_eq!(hex(&got), want, "{alg}");
        }
    }

    #[test]
    fn hmac_sha224_hashes_a_key_longer_than_the_block_first() {
        // RFC 4231 test case 6.
        let got = mac(
            Algorithm::HmacSha224,
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(hex(&got), "95e9a0db962095adaebe9b2d6f0dbce2d499f112f2d2b7273fa6870e");
    }

    #[test]
    fn verification_accepts_only_the_full_exact_mac() -> Result<(), InvalidLength> {
        for alg in Algorithm::ALL {
            let keyed = Keyed::new(alg, b"Jefe")?;
            let good = keyed.mac(JEFE);
            assert!(keyed.verify(JEFE, &good), "{alg}");
            let mut flipped = good.clone();
            if let Some(last) = flipped.last_mut() {
                *last ^= 1;
            }
            assert!(!keyed.verify(JEFE, &flipped), "{alg}: altered MAC");
            assert!(!keyed.verify(JEFE, &good[..good.len() - 1]), "{alg}: truncated MAC");
            assert!(!keyed.verify(b"other data", &good), "{alg}: other data");
            let other = Keyed::new(alg, b"another key")?;
            assert!(!other.verify(JEFE, &good), "{alg}: other key");
        }
        Ok(())
    }

    #[test]
    fn algorithm_names_parse_like_bind_writes_them() {
        assert!(matches!("HMAC-SHA512".parse::<Algorithm>(), Ok(Algorithm::HmacSha512)));
        assert!(matches!("hmac-sha1.".parse::<Algorithm>(), Ok(Algorithm::HmacSha1)));
        let md5 = "hmac-md5".parse::<Algorithm>();
        assert!(
            matches!(&md5, Err(TsigError::InsecureAlgorithm { name }) if name == "hmac-md5"),
            "{md5:?}"
        );
        let md5 = md5.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(md5.contains("not supported") && md5.contains("hmac-sha256"), "{md5}");
        let empty = "".parse::<Algorithm>();
        assert!(
            matches!(&empty, Err(TsigError::UnknownAlgorithm { name }) if name.is_empty()),
            "{empty:?}"
        );
    }

    #[test]
    fn a_bad_key_name_is_a_typed_error_naming_it() {
        let err = Key::new("a..b", Algorithm::HmacSha256, b"x").err();
        assert!(
            matches!(&err, Some(TsigError::KeyName { name, .. }) if name == "a..b"),
            "{err:?}"
        );
        let source = err.as_ref().and_then(std::error::Error::source);
        assert!(source.is_some(), "the hickory error is kept as the source");
    }

    #[test]
    fn key_debug_output_hides_the_secret() {
        let key = Key::new("k", Algorithm::HmacSha256, b"super-secret").ok();
        let shown = format!("{key:?}");
        assert!(!shown.contains("super") && !shown.contains("115"), "{shown}");
    }

    #[test]
    fn a_signed_request_verifies_as_its_own_first_answer_shape() {
        // Sign a message, then check a response signed the way a server does (request MAC chained in).
        let key = Key::new("externaldns-key", Algorithm::HmacSha224, b"0123456789").ok();
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
        let mac = key.keyed.mac(&tbs);
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
        let Ok(key) = Key::new("externaldns-key", Algorithm::HmacSha256, b"x") else {
            panic!("key")
        };
        let mut response = Message::response(7, hickory_proto::op::OpCode::Update);
        let tsig = TSIG::new(
            TsigAlgorithm::HmacSha256,
            5,
            FUDGE,
            vec![],
            7,
            Some(TsigRcode::BadSig),
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
