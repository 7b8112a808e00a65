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
use hickory_proto::rr::rdata::tsig::{TSIG, TsigAlgorithm, TsigError as TsigRcode, make_tsig_record, message_tbs};
use hickory_proto::rr::{Name, Record};
use hickory_proto::serialize::binary::{BinDecodable, BinDecoder, BinEncodable, BinEncoder};
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

    /// Whether `mac` is the MAC of `data`, compared in constant time: the full MAC, or with `truncated` a
    /// leading part of it (the caller checks that part's length against RFC 8945 §5.2.2.1 first).
    fn verify(&self, data: &[u8], mac: &[u8], truncated: bool) -> bool {
        fn run<M: Mac + Clone>(m: &M, data: &[u8], mac: &[u8], truncated: bool) -> bool {
            let mut m = m.clone();
            m.update(data);
            if truncated {
                m.verify_truncated_left(mac).is_ok()
            } else {
                m.verify_slice(mac).is_ok()
            }
        }
        match self {
            Keyed::Sha1(m) => run(m, data, mac, truncated),
            Keyed::Sha224(m) => run(m, data, mac, truncated),
            Keyed::Sha256(m) => run(m, data, mac, truncated),
            Keyed::Sha384(m) => run(m, data, mac, truncated),
            Keyed::Sha512(m) => run(m, data, mac, truncated),
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
        if !self.key.keyed.verify(&tbs, &tsig.mac, false) {
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

/// What a server found wrong with a signed request (RFC 8945 §5.2), in the order it checks: the key, the
/// MAC, then the time. Each names the key so a log line says which secondary or client is misconfigured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The TSIG record cannot be read, or its MAC is longer than the algorithm's or shorter than RFC 8945
    /// §5.2.2.1 allows: answered FORMERR, unsigned.
    #[error("malformed TSIG in the request: {0}")]
    Malformed(String),
    /// No key of that name and algorithm is configured (BADKEY).
    #[error("BADKEY: the request is signed with key {name:?} ({algorithm}), which is not configured")]
    BadKey {
        /// The key name in the request.
        name: String,
        /// The algorithm named in the request.
        algorithm: String,
    },
    /// The MAC does not match the configured secret (BADSIG).
    #[error("BADSIG: the request's signature does not match the secret of key {key:?}")]
    BadSig {
        /// The key name.
        key: String,
    },
    /// The MAC is truncated, which this server does not accept (BADTRUNC).
    #[error("BADTRUNC: the request's MAC for key {key:?} is truncated to {len} bytes")]
    BadTrunc {
        /// The key name.
        key: String,
        /// The MAC's length.
        len: usize,
    },
    /// The request was signed more than its fudge away from our clock (BADTIME).
    #[error("BADTIME: the request with key {key:?} was signed at {signed} but our clock says {now}")]
    BadTime {
        /// The key name.
        key: String,
        /// The request's time signed.
        signed: u64,
        /// Our time.
        now: u64,
    },
}

impl RequestError {
    /// The TSIG error code the answer carries (`None`: a FORMERR without TSIG).
    pub fn tsig_rcode(&self) -> Option<TsigRcode> {
        match self {
            RequestError::Malformed(_) => None,
            RequestError::BadKey { .. } => Some(TsigRcode::BadKey),
            RequestError::BadSig { .. } => Some(TsigRcode::BadSig),
            RequestError::BadTrunc { .. } => Some(TsigRcode::BadTrunc),
            RequestError::BadTime { .. } => Some(TsigRcode::BadTime),
        }
    }
}

/// A refused signed request: why, and what the answer's TSIG record needs (RFC 8945 §5.3.2: BADKEY and
/// BADSIG answers carry an empty MAC, BADTIME and BADTRUNC answers are signed).
#[derive(Debug)]
pub struct Refusal {
    error: RequestError,
    /// The request's TSIG record.
    tsig: Option<Box<Record<TSIG>>>,
    /// The key and request MAC, when the MAC verified (BADTIME, BADTRUNC: the answer is signed).
    signer: Option<Box<ResponseSigner>>,
}

impl Refusal {
    /// Why the request was refused.
    pub fn error(&self) -> &RequestError {
        &self.error
    }

    /// Appends the TSIG error record to `wire`, the encoded NOTAUTH (or FORMERR) answer without one: unsigned
    /// for BADKEY and BADSIG, signed for BADTIME (our time in Other Data) and BADTRUNC, nothing for FORMERR.
    pub fn seal(&self, wire: &mut Vec<u8>, now: u64) -> Result<(), TsigError> {
        let (Some(rcode), Some(tsig)) = (self.error.tsig_rcode(), &self.tsig) else {
            return Ok(());
        };
        match (&self.signer, rcode) {
            (Some(signer), TsigRcode::BadTime) => {
                let mut other = Vec::with_capacity(6);
                other.extend_from_slice(&((now >> 32) as u16).to_be_bytes());
                other.extend_from_slice(&(now as u32).to_be_bytes());
                signer
                    .as_ref()
                    .clone()
                    .sign_with(wire, tsig.data.time, Some(rcode), other)
            }
            (Some(signer), _) => signer.as_ref().clone().sign_with(wire, now, Some(rcode), Vec::new()),
            (None, _) => {
                let data = TSIG::new(
                    tsig.data.algorithm.clone(),
                    now,
                    FUDGE,
                    Vec::new(),
                    tsig.data.oid,
                    Some(rcode),
                    Vec::new(),
                );
                append_tsig(wire, &make_tsig_record(tsig.name.clone(), data), &tsig.name)
            }
        }
    }
}

/// A request whose TSIG verified: the key it used and the signer of the answers.
#[derive(Debug, Clone)]
pub struct SignedRequest {
    signer: ResponseSigner,
}

impl SignedRequest {
    /// The key the request was signed with.
    pub fn key(&self) -> &Key {
        &self.signer.key
    }

    /// The signer of the answer, or of every message of a transfer, chained from the request's MAC.
    pub fn signer(&self) -> ResponseSigner {
        self.signer.clone()
    }
}

/// Checks the TSIG of a request `wire` (which must carry one) against the server's `keys` at Unix time `now`,
/// as RFC 8945 §5.2 orders it: the key, the MAC, then the time.
pub fn verify_request(keys: &[Key], wire: &[u8], now: u64) -> Result<SignedRequest, Refusal> {
    let refuse = |error, tsig, signer| Refusal { error, tsig, signer };
    let (tbs, tsig) = hickory_proto::rr::rdata::tsig::signed_bitmessage_to_buf(wire, None, true)
        .map_err(|e| refuse(RequestError::Malformed(e.to_string()), None, None))?;
    let name = tsig.name.to_lowercase();
    let Some(key) = keys
        .iter()
        .find(|k| k.name == name && k.algorithm.hickory() == tsig.data.algorithm)
    else {
        let error = RequestError::BadKey {
            name: tsig.name.to_ascii().trim_end_matches('.').to_string(),
            algorithm: tsig.data.algorithm.to_string(),
        };
        return Err(refuse(error, Some(tsig), None));
    };
    let full = key.algorithm.mac_len();
    let len = tsig.data.mac.len();
    // RFC 8945 §5.2.2.1: longer than the hash, or shorter than 10 bytes or half the hash, is malformed.
    if len > full || len < 10.max(full / 2) {
        let error = RequestError::Malformed(format!("a MAC of {len} bytes for {}", key.algorithm));
        return Err(refuse(error, Some(tsig), None));
    }
    // A truncated MAC cannot be checked with `verify_slice`; it is refused by policy below, after a
    // check of the prefix, so that a forged request still gets BADSIG.
    let good = key.keyed.verify(&tbs, &tsig.data.mac, len < full);
    if !good {
        return Err(refuse(RequestError::BadSig { key: key.name() }, Some(tsig), None));
    }
    let signer = ResponseSigner {
        key: key.clone(),
        previous_mac: tsig.data.mac.clone(),
        first: true,
        fudge: tsig.data.fudge,
    };
    if len < full {
        let error = RequestError::BadTrunc { key: key.name(), len };
        return Err(refuse(error, Some(tsig), Some(Box::new(signer))));
    }
    if tsig.data.time.abs_diff(now) > u64::from(tsig.data.fudge) {
        let error = RequestError::BadTime {
            key: key.name(),
            signed: tsig.data.time,
            now,
        };
        return Err(refuse(error, Some(tsig), Some(Box::new(signer))));
    }
    Ok(SignedRequest { signer })
}

/// Signs the answers to one verified request: the first with the request's MAC and every TSIG variable,
/// each later message of a transfer with the previous answer's MAC and the timers only (RFC 8945 §5.3.1).
/// Every message is signed, so a client never has to cover unsigned ones.
#[derive(Debug, Clone)]
pub struct ResponseSigner {
    key: Key,
    previous_mac: Vec<u8>,
    first: bool,
    fudge: u16,
}

impl ResponseSigner {
    /// The bytes the TSIG record adds to a message, for fitting a UDP answer into the client's size.
    pub fn overhead(&self) -> usize {
        let name = |n: &Name| n.iter().map(|l| l.len() + 1).sum::<usize>() + 1;
        // owner, type/class/ttl/rdlength, algorithm, time 6, fudge 2, MAC size 2 + MAC, id 2, error 2, other 2+6.
        name(&self.key.name)
            + 10
            + name(&self.key.algorithm.hickory().to_name())
            + 6
            + 2
            + 2
            + self.key.algorithm.mac_len()
            + 6
            + 6
    }

    /// Appends the TSIG record signing `wire` (an encoded message without one) at Unix time `now`, and
    /// counts it in the header's ARCOUNT.
    pub fn sign(&mut self, wire: &mut Vec<u8>, now: u64) -> Result<(), TsigError> {
        self.sign_with(wire, now, None, Vec::new())
    }

    fn sign_with(
        &mut self,
        wire: &mut Vec<u8>,
        time: u64,
        error: Option<TsigRcode>,
        other: Vec<u8>,
    ) -> Result<(), TsigError> {
        let failed = |source| TsigError::Sign {
            name: self.key.name(),
            source,
        };
        let id = match wire.get(..2) {
            Some(&[a, b]) => u16::from_be_bytes([a, b]),
            _ => return Err(failed(ProtoError::from("a message shorter than its header"))),
        };
        let stub = TSIG::new(
            self.key.algorithm.hickory(),
            time,
            self.fudge,
            Vec::new(),
            id,
            error,
            other,
        );
        let mut tbs = Vec::with_capacity(2 + self.previous_mac.len() + wire.len() + 64);
        tbs.extend_from_slice(&(self.previous_mac.len() as u16).to_be_bytes());
        tbs.extend_from_slice(&self.previous_mac);
        tbs.extend_from_slice(wire);
        if self.first {
            // Encoded apart: an encoder writes from offset 0 of its buffer, and caps it at 64 KiB.
            let mut variables = Vec::with_capacity(64);
            stub.emit_tsig_for_mac(&mut BinEncoder::new(&mut variables), &self.key.name)
                .map_err(failed)?;
            tbs.extend_from_slice(&variables);
        } else {
            tbs.extend_from_slice(&((time >> 32) as u16).to_be_bytes());
            tbs.extend_from_slice(&(time as u32).to_be_bytes());
            tbs.extend_from_slice(&self.fudge.to_be_bytes());
        }
        let mac = self.key.keyed.mac(&tbs);
        append_tsig(
            wire,
            &make_tsig_record(self.key.name.clone(), stub.set_mac(mac.clone())),
            &self.key.name,
        )?;
        self.previous_mac = mac;
        self.first = false;
        Ok(())
    }
}

/// Appends a TSIG record to an encoded message and counts it in ARCOUNT.
fn append_tsig(wire: &mut Vec<u8>, record: &Record<TSIG>, key_name: &Name) -> Result<(), TsigError> {
    let failed = |source| TsigError::Sign {
        name: key_name.to_ascii().trim_end_matches('.').to_string(),
        source,
    };
    let count = match wire.get(10..12) {
        Some(&[a, b]) => u16::from_be_bytes([a, b]),
        _ => return Err(failed(ProtoError::from("a message shorter than its header"))),
    };
    let count = count
        .checked_add(1)
        .ok_or_else(|| failed(ProtoError::from("no room for another additional record")))?;
    // A fresh encoder: the TSIG record's names are written uncompressed, as RFC 8945 §4.2 prefers.
    let mut rr = Vec::with_capacity(128);
    record.emit(&mut BinEncoder::new(&mut rr)).map_err(failed)?;
    wire.extend_from_slice(&rr);
    wire[10..12].copy_from_slice(&count.to_be_bytes());
    Ok(())
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
            assert!(keyed.verify(JEFE, &good, false), "{alg}");
            let mut flipped = good.clone();
            if let Some(last) = flipped.last_mut() {
                *last ^= 1;
            }
            assert!(!keyed.verify(JEFE, &flipped, false), "{alg}: altered MAC");
            assert!(
                !keyed.verify(JEFE, &good[..good.len() - 1], false),
                "{alg}: truncated MAC"
            );
            assert!(!keyed.verify(b"other data", &good, false), "{alg}: other data");
            let other = Keyed::new(alg, b"another key")?;
            assert!(!other.verify(JEFE, &good, false), "{alg}: other key");
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

    fn signed_query(key: &Key, now: u64) -> (Message, Vec<u8>) {
        let mut request = Message::query();
        request.add_query(hickory_proto::op::Query::query(
            Name::from_ascii("example.org.").unwrap_or_default(),
            hickory_proto::rr::RecordType::AXFR,
        ));
        let Ok((wire, _)) = key.sign(&mut request, now) else {
            panic!("sign")
        };
        (request, wire)
    }

    fn answer_wire(request: &Message, rcode: hickory_proto::op::ResponseCode) -> Vec<u8> {
        let mut response = Message::response(request.metadata.id, request.metadata.op_code);
        response.metadata.response_code = rcode;
        response.add_queries(request.queries.iter().cloned());
        response.to_vec().unwrap_or_default()
    }

    #[test]
    fn a_verified_request_signs_a_chain_of_answers_a_client_accepts() {
        let now = 1_700_000_000;
        for alg in Algorithm::ALL {
            let Ok(key) = Key::new("xfr-key", alg, b"0123456789abcdef") else {
                panic!("key")
            };
            let Ok(other) = Key::new("other", Algorithm::HmacSha256, b"x") else {
                panic!("key")
            };
            let (request, wire) = signed_query(&key, now);
            let Ok(signed) = verify_request(&[other, key.clone()], &wire, now + 10) else {
                panic!("{alg}: a good request is refused")
            };
            assert_eq!(signed.key().name(), "xfr-key");
            // What the client kept: the request MAC, read back from the wire it sent.
            let request_mac = read_tsig(&wire)
                .ok()
                .flatten()
                .map(|t| t.data.mac.clone())
                .unwrap_or_default();
            let mut verifier = Verifier::new(&key, request_mac, now + 10);
            let mut signer = signed.signer();
            for _ in 0..3 {
                let mut answer = answer_wire(&request, hickory_proto::op::ResponseCode::NoError);
                let before = answer.len();
                assert!(signer.sign(&mut answer, now + 10).is_ok());
                assert_eq!(
                    answer.len() - before,
                    signer.overhead() - 6,
                    "{alg}: overhead counts BADTIME's other data"
                );
                assert_eq!(verifier.check(&answer), Ok(true), "{alg}");
            }
        }
    }

    #[test]
    fn requests_are_refused_in_rfc_order_with_the_answer_each_needs() {
        let now = 1_700_000_000;
        let Ok(key) = Key::new("xfr-key", Algorithm::HmacSha256, b"right") else {
            panic!("key")
        };
        let Ok(wrong) = Key::new("xfr-key", Algorithm::HmacSha256, b"wrong") else {
            panic!("key")
        };
        let Ok(unknown) = Key::new("nobody", Algorithm::HmacSha256, b"right") else {
            panic!("key")
        };
        let Ok(other_alg) = Key::new("xfr-key", Algorithm::HmacSha512, b"right") else {
            panic!("key")
        };
        let keys = [key.clone()];
        let tsig_of = |wire: &[u8]| read_tsig(wire).ok().flatten().map(|t| t.data.clone());

        for (signer, expected) in [
            (&unknown, TsigRcode::BadKey),
            (&other_alg, TsigRcode::BadKey),
            (&wrong, TsigRcode::BadSig),
        ] {
            let (request, wire) = signed_query(signer, now);
            let Err(refusal) = verify_request(&keys, &wire, now) else {
                panic!("{expected:?}: accepted")
            };
            assert_eq!(refusal.error().tsig_rcode(), Some(expected));
            let mut answer = answer_wire(&request, hickory_proto::op::ResponseCode::NotAuth);
            assert!(refusal.seal(&mut answer, now).is_ok());
            let tsig = tsig_of(&answer);
            assert_eq!(tsig.as_ref().and_then(|t| t.error), Some(expected));
            assert_eq!(tsig.map(|t| t.mac.len()), Some(0), "{expected:?} answers are unsigned");
        }

        // A good MAC signed long ago: BADTIME, signed, our time in Other Data, the request's time signed.
        let (request, wire) = signed_query(&key, now - 1000);
        let Err(refusal) = verify_request(&keys, &wire, now) else {
            panic!("BADTIME: accepted")
        };
        assert!(matches!(refusal.error(), RequestError::BadTime { signed, .. } if *signed == now - 1000));
        let mut answer = answer_wire(&request, hickory_proto::op::ResponseCode::NotAuth);
        assert!(refusal.seal(&mut answer, now).is_ok());
        let Some(tsig) = tsig_of(&answer) else {
            panic!("no TSIG")
        };
        assert_eq!(tsig.error, Some(TsigRcode::BadTime));
        assert_eq!(tsig.time, now - 1000);
        assert_eq!(tsig.other, vec![0, 0, 0x65, 0x53, 0xf1, 0x00]);
        assert_eq!(tsig.mac.len(), 32, "a BADTIME answer is signed");
        let refused = read_tsig(&wire)
            .ok()
            .flatten()
            .map(|t| t.data.mac.clone())
            .unwrap_or_default();
        let got = Verifier::new(&key, refused, now).check(&answer);
        assert!(
            matches!(&got, Err(TsigFailure::Rejected(m)) if m.contains("BADTIME")),
            "{got:?}"
        );

        // One flipped byte in the signed body: BADSIG.
        let (_, mut wire) = signed_query(&key, now);
        wire[13] ^= 0x20; // the question name's first letter, case flipped
        let got = verify_request(&keys, &wire, now).map(|_| ());
        assert!(
            matches!(&got, Err(r) if matches!(r.error(), RequestError::BadSig { .. })),
            "{got:?}"
        );

        // No TSIG at all is malformed for this function, and its answer carries none.
        let Ok(plain) = Message::query().to_vec() else {
            panic!("encode")
        };
        let Err(refusal) = verify_request(&keys, &plain, now) else {
            panic!("accepted")
        };
        assert!(matches!(refusal.error(), RequestError::Malformed(_)));
        let mut answer = plain.clone();
        assert!(refusal.seal(&mut answer, now).is_ok());
        assert_eq!(answer, plain);
    }
}
