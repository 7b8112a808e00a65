//! DNS cookies on the server side (RFC 7873), with RFC 9018's interoperable server cookies: a client that
//! sends back the cookie we gave it has proven it receives at its source address, so it cannot be a spoofed
//! victim of reflection, and response rate limiting lets it through.
//!
//! The server cookie is RFC 9018's: version 1, three reserved bytes, the time it was made (Unix seconds),
//! and SipHash-2-4 of the client cookie, those eight bytes and the client's address under a 128-bit secret.
//! Nothing is stored per client: a cookie is checked by making it again. Replicas behind one address share
//! the secret (`--dns-server-cookie-secret`), so a cookie one replica made is valid at every other; a
//! process given none draws its own, and a client that meets another replica gets BADCOOKIE once with a
//! fresh cookie and retries (RFC 7873 §5.3), which is the price of not sharing one.

use std::fmt;
use std::hash::Hasher as _;
use std::net::IpAddr;
use std::str::FromStr;

use hickory_proto::op::Message;
use hickory_proto::rr::rdata::opt::{EdnsCode, EdnsOption};
use siphasher::sip::SipHasher24;

/// The EDNS option code of COOKIE (RFC 7873 §4).
const COOKIE: u16 = 10;

/// A client cookie's length: exactly 8 bytes (RFC 7873 §4).
const CLIENT_LEN: usize = 8;

/// RFC 9018 §4.1: a server cookie of ours is 16 bytes.
const SERVER_LEN: usize = 16;

/// RFC 9018 §4.3: a cookie is valid for an hour after it was made...
const MAX_AGE: i64 = 3_600;

/// ...and up to five minutes before, for replicas whose clocks differ a little.
const MAX_AHEAD: i64 = 300;

/// RFC 9018 §4.3: a cookie older than half an hour is replaced in the answer, so a client that keeps
/// asking never holds one about to expire.
const RENEW_AFTER: i64 = 1_800;

/// The 128-bit secret the server cookies are made with. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct CookieSecret([u8; 16]);

impl fmt::Debug for CookieSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CookieSecret(..)")
    }
}

/// Why a cookie secret cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CookieSecretError {
    /// The text is not 32 hexadecimal digits.
    #[error("a DNS cookie secret is 32 hexadecimal digits (128 bits, e.g. from `openssl rand -hex 16`)")]
    NotHex,
    /// The system's random source failed.
    #[error("cannot draw a random DNS cookie secret: {0}")]
    Random(#[source] getrandom::Error),
}

impl CookieSecret {
    /// A secret of its own for this process, from the system's random source.
    pub fn generate() -> Result<CookieSecret, CookieSecretError> {
        let mut secret = [0u8; 16];
        getrandom::fill(&mut secret).map_err(CookieSecretError::Random)?;
        Ok(CookieSecret(secret))
    }

    /// The secret from its 16 bytes.
    pub fn from_bytes(secret: [u8; 16]) -> CookieSecret {
        CookieSecret(secret)
    }
}

impl FromStr for CookieSecret {
    type Err = CookieSecretError;

    /// 32 hexadecimal digits, either case.
    fn from_str(text: &str) -> Result<CookieSecret, CookieSecretError> {
        let text = text.trim().as_bytes();
        // `from_str_radix` alone would take a sign.
        if text.len() != 32 || !text.iter().all(u8::is_ascii_hexdigit) {
            return Err(CookieSecretError::NotHex);
        }
        let mut secret = [0u8; 16];
        for (byte, pair) in secret.iter_mut().zip(text.chunks_exact(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| CookieSecretError::NotHex)?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| CookieSecretError::NotHex)?;
        }
        Ok(CookieSecret(secret))
    }
}

/// What a request's COOKIE option says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cookie {
    /// No COOKIE option (or no EDNS at all).
    Absent,
    /// A COOKIE option of a length RFC 7873 §5.2.2 calls malformed: FORMERR.
    Malformed,
    /// A client cookie alone: answered normally, with a server cookie to use next time (§5.2.3).
    ClientOnly {
        /// The client cookie, echoed.
        client: [u8; CLIENT_LEN],
    },
    /// A server cookie that is not ours, or is too old or too far ahead: BADCOOKIE over UDP (§5.2.3).
    Invalid {
        /// The client cookie, echoed.
        client: [u8; CLIENT_LEN],
    },
    /// A server cookie we made for this client and address, still fresh: the client is who it says.
    Valid {
        /// The client cookie, echoed.
        client: [u8; CLIENT_LEN],
        /// The server cookie to send back: the client's own while it is young, else a fresh one.
        server: [u8; SERVER_LEN],
    },
}

impl Cookie {
    /// The client cookie, when the option had a usable one.
    pub(crate) fn client(self) -> Option<[u8; CLIENT_LEN]> {
        match self {
            Cookie::Absent | Cookie::Malformed => None,
            Cookie::ClientOnly { client } | Cookie::Invalid { client } | Cookie::Valid { client, .. } => Some(client),
        }
    }

    /// Whether the client proved it receives at its address.
    pub(crate) fn is_valid(self) -> bool {
        matches!(self, Cookie::Valid { .. })
    }

    /// The label this outcome is counted under.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Cookie::Absent => "absent",
            Cookie::Malformed => "malformed",
            Cookie::ClientOnly { .. } => "client_only",
            Cookie::Invalid { .. } => "invalid",
            Cookie::Valid { .. } => "valid",
        }
    }
}

/// The server's cookie maker and checker.
#[derive(Debug, Clone)]
pub(crate) struct Cookies {
    secret: CookieSecret,
}

impl Cookies {
    pub(crate) fn new(secret: CookieSecret) -> Cookies {
        Cookies { secret }
    }

    /// What `request`'s COOKIE option says, for a client at `client_ip`, at Unix time `now`.
    pub(crate) fn read(&self, request: &Message, client_ip: IpAddr, now: u32) -> Cookie {
        let Some(edns) = &request.edns else {
            return Cookie::Absent;
        };
        let Some(EdnsOption::Unknown(_, data)) = edns.option(EdnsCode::Cookie) else {
            return Cookie::Absent;
        };
        // RFC 7873 §5.2.2: 8 bytes of client cookie, then nothing or 8 to 32 bytes of server cookie.
        let Some((client, server)) = data.split_first_chunk::<CLIENT_LEN>() else {
            return Cookie::Malformed;
        };
        let client = *client;
        match server.len() {
            0 => Cookie::ClientOnly { client },
            8..=32 => match self.check(&client, server, client_ip, now) {
                Some(server) => Cookie::Valid { client, server },
                None => Cookie::Invalid { client },
            },
            _ => Cookie::Malformed,
        }
    }

    /// The server cookie to send back when `server` is a valid one of ours: itself while young, else a new one.
    fn check(&self, client: &[u8; CLIENT_LEN], server: &[u8], ip: IpAddr, now: u32) -> Option<[u8; SERVER_LEN]> {
        let server: &[u8; SERVER_LEN] = server.try_into().ok()?;
        if server[..4] != [1, 0, 0, 0] {
            return None;
        }
        let made = u32::from_be_bytes([server[4], server[5], server[6], server[7]]);
        // Serial-number arithmetic (RFC 1982), as RFC 9018 §4.3 asks: the age may be negative.
        let age = i64::from(now.wrapping_sub(made) as i32);
        if !(-MAX_AHEAD..=MAX_AGE).contains(&age) {
            return None;
        }
        let expected = self.make(client, ip, made);
        // Not a secret comparison in the timing sense that matters: the attacker learns the right hash only
        // for a client cookie and address of its own, which it is given anyway.
        if expected != *server {
            return None;
        }
        Some(if age > RENEW_AFTER {
            self.make(client, ip, now)
        } else {
            *server
        })
    }

    /// RFC 9018 §4.4: the server cookie for `client` at `ip`, made at Unix time `at`.
    pub(crate) fn make(&self, client: &[u8; CLIENT_LEN], ip: IpAddr, at: u32) -> [u8; SERVER_LEN] {
        let mut cookie = [0u8; SERVER_LEN];
        cookie[0] = 1;
        cookie[4..8].copy_from_slice(&at.to_be_bytes());
        let mut hasher = SipHasher24::new_with_key(&self.secret.0);
        hasher.write(client);
        hasher.write(&cookie[..8]);
        match ip {
            IpAddr::V4(v4) => hasher.write(&v4.octets()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                // A dual-stack socket sees IPv4 clients as mapped addresses: hash what the client sees.
                Some(v4) => hasher.write(&v4.octets()),
                None => hasher.write(&v6.octets()),
            },
        }
        cookie[8..].copy_from_slice(&hasher.finish().to_le_bytes());
        cookie
    }

    /// The COOKIE option of an answer to `cookie` from `ip` at `now`: the client cookie with our server
    /// cookie (the client's own while valid and young); `None` when the request had no usable client cookie.
    pub(crate) fn answer_option(&self, cookie: Cookie, ip: IpAddr, now: u32) -> Option<EdnsOption> {
        let client = cookie.client()?;
        let server = match cookie {
            Cookie::Valid { server, .. } => server,
            _ => self.make(&client, ip, now),
        };
        let mut data = Vec::with_capacity(CLIENT_LEN + SERVER_LEN);
        data.extend_from_slice(&client);
        data.extend_from_slice(&server);
        Some(EdnsOption::Unknown(COOKIE, data))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use hickory_proto::op::{Edns, MessageType, OpCode, Query};
    use hickory_proto::rr::{Name, RecordType};

    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("test hex"))
            .collect()
    }

    fn cookies() -> Cookies {
        Cookies::new("e5e973e5a6b2a43f48e7dc849e37bfcf".parse().expect("test secret"))
    }

    /// A query for `web.example.org. A` with an OPT record, carrying `option` as its COOKIE option when
    /// given: what the cookie and guard tests send.
    pub(crate) fn request(option: Option<Vec<u8>>) -> Message {
        let mut m = Message::new(7, MessageType::Query, OpCode::Query);
        m.add_query(Query::query(
            Name::from_ascii("web.example.org.").expect("name"),
            RecordType::A,
        ));
        let mut edns = Edns::new();
        if let Some(data) = option {
            edns.options_mut().insert(EdnsOption::Unknown(COOKIE, data));
        }
        m.set_edns(edns);
        m
    }

    const CLIENT: &str = "2464c4abcf10c957";
    const IP: [u8; 4] = [198, 51, 100, 100];

    #[test]
    fn the_server_cookie_is_rfc_9018s_test_vector() {
        // RFC 9018 Appendix A.1: the first answer to a client with this cookie, at 2019-06-05 10:53:05 UTC.
        let client: [u8; 8] = hex(CLIENT).try_into().expect("8 bytes");
        let made = cookies().make(&client, IpAddr::from(IP), 1_559_731_985);
        assert_eq!(made.to_vec(), hex("010000005cf79f111f8130c3eee29480"));
    }

    #[test]
    fn a_client_cookie_alone_is_answered_with_a_server_cookie() {
        let c = cookies();
        let ip = IpAddr::from(IP);
        let read = c.read(&request(Some(hex(CLIENT))), ip, 1_559_731_985);
        assert_eq!(read.label(), "client_only");
        let Some(EdnsOption::Unknown(10, data)) = c.answer_option(read, ip, 1_559_731_985) else {
            panic!("a cookie option");
        };
        assert_eq!(data, hex("2464c4abcf10c957010000005cf79f111f8130c3eee29480"));
    }

    #[test]
    fn our_cookie_is_valid_for_an_hour_from_that_address_only() {
        let c = cookies();
        let ip = IpAddr::from(IP);
        let both = hex("2464c4abcf10c957010000005cf79f111f8130c3eee29480");
        let at = 1_559_731_985u32;
        let read = c.read(&request(Some(both.clone())), ip, at + 10);
        assert!(read.is_valid(), "{read:?}");
        let Cookie::Valid { server, .. } = read else {
            unreachable!()
        };
        assert_eq!(server.to_vec(), both[8..], "a young cookie is sent back as it came");
        // Older than half an hour: still valid, but a fresh one goes back.
        let Cookie::Valid { server, .. } = c.read(&request(Some(both.clone())), ip, at + 2_000) else {
            panic!("still valid at 2,000 s");
        };
        assert_eq!(server[4..8], (at + 2_000).to_be_bytes());
        assert_eq!(c.read(&request(Some(both.clone())), ip, at + 3_601).label(), "invalid");
        assert_eq!(c.read(&request(Some(both.clone())), ip, at - 299).label(), "valid");
        assert_eq!(c.read(&request(Some(both.clone())), ip, at - 301).label(), "invalid");
        let other = IpAddr::from([198, 51, 100, 101]);
        assert_eq!(c.read(&request(Some(both.clone())), other, at).label(), "invalid");
        let mut forged = both.clone();
        forged[23] ^= 1;
        assert_eq!(c.read(&request(Some(forged)), ip, at).label(), "invalid");
        let other_secret = Cookies::new(CookieSecret::from_bytes([7; 16]));
        assert_eq!(other_secret.read(&request(Some(both)), ip, at).label(), "invalid");
    }

    #[test]
    fn lengths_outside_rfc_7873_are_malformed_and_no_option_is_absent() {
        let c = cookies();
        let ip = IpAddr::from(IP);
        for len in [0, 1, 7, 9, 15, 41] {
            assert_eq!(
                c.read(&request(Some(vec![1; len])), ip, 0),
                Cookie::Malformed,
                "{len} bytes"
            );
        }
        // 8 to 32 bytes of server cookie are well formed, though only our 16 can be valid.
        assert_eq!(c.read(&request(Some(vec![1; 40])), ip, 0).label(), "invalid");
        assert_eq!(c.read(&request(None), ip, 0), Cookie::Absent);
        let mut plain = request(None);
        plain.edns = None;
        assert_eq!(c.read(&plain, ip, 0), Cookie::Absent);
        assert_eq!(c.answer_option(Cookie::Absent, ip, 0), None);
    }

    #[test]
    fn mapped_ipv4_clients_get_the_cookie_of_their_ipv4_address() {
        let c = cookies();
        let client = [3; 8];
        let v4 = IpAddr::from(IP);
        let mapped = IpAddr::V6(std::net::Ipv4Addr::from(IP).to_ipv6_mapped());
        assert_eq!(c.make(&client, v4, 5), c.make(&client, mapped, 5));
        assert_ne!(
            c.make(&client, v4, 5),
            c.make(&client, "2001:db8::1".parse().expect("ip"), 5)
        );
    }

    #[test]
    fn secrets_are_32_hex_digits_and_never_printed() {
        assert!("00112233445566778899aabbccddeeff".parse::<CookieSecret>().is_ok());
        assert!("00112233445566778899AABBCCDDEEFF".parse::<CookieSecret>().is_ok());
        assert!("0011".parse::<CookieSecret>().is_err());
        assert!("zz112233445566778899aabbccddeeff".parse::<CookieSecret>().is_err());
        assert!("+0112233445566778899aabbccddeeff".parse::<CookieSecret>().is_err());
        let s: CookieSecret = "00112233445566778899aabbccddeeff".parse().expect("secret");
        assert_eq!(format!("{s:?}"), "CookieSecret(..)");
        assert_ne!(CookieSecret::generate().ok(), CookieSecret::generate().ok());
    }
}
