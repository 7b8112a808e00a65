//! The server's configuration values read from text (`--dns-server-zone`, `--dns-server-ns`,
//! `--dns-server-secondary`, the SOA timers), beside the types they make, so the checks and their words live
//! with the types; the binary only names the flag a [`ConfigError`] came from.

use std::net::{AddrParseError, IpAddr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use extdns_dns_wire::TsigKey;
use hickory_proto::ProtoError;
use hickory_proto::rr::Name;

use crate::config::{Secondary, ZoneConfig};

/// The port a secondary written without one is sent NOTIFY on.
const DNS_PORT: u16 = 53;

/// Why a configuration value is refused. The messages say what is wrong with the value; the caller puts
/// the flag and the value in front.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// An empty name or the root, where a zone or host is wanted.
    #[error("not a domain name (empty)")]
    EmptyName,
    /// The text is not a domain name.
    #[error("not a domain name ({source})")]
    Name {
        /// The DNS library's reason.
        #[source]
        source: ProtoError,
    },
    /// `NAME=IP` whose IP part is not an address.
    #[error("{ip:?} is not an IP address (want NAME or NAME=IP)")]
    GlueAddress {
        /// The text after `=`.
        ip: String,
        /// The parser's reason.
        #[source]
        source: AddrParseError,
    },
    /// A secondary's address is neither an IP address nor one with a port.
    #[error("{address:?} is not an IP address, with or without a port (192.0.2.1, 192.0.2.1:5353, [2001:db8::1]:53)")]
    SecondaryAddress {
        /// The address part as given.
        address: String,
        /// The parser's reason.
        #[source]
        source: AddrParseError,
    },
    /// A secondary names a key the server does not know.
    #[error("no --dns-server-tsig-key is named {key:?}")]
    UnknownKey {
        /// The key name as given.
        key: String,
    },
    /// `label.<origin>` is too long to be a name (a zone of about 253 bytes).
    #[error("{name}: {source}")]
    Prepended {
        /// The name that was to be made, as text.
        name: String,
        /// The DNS library's reason.
        #[source]
        source: ProtoError,
    },
    /// A SOA timer or TTL with a fraction of a second.
    #[error("want whole seconds")]
    Fraction,
    /// A SOA timer or TTL beyond what the field holds.
    #[error("at most 2147483647s (about 68 years), the largest value a SOA or TTL field holds")]
    TooLong,
    /// A SOA timer below its minimum.
    #[error("want at least {min}s")]
    TooShort {
        /// The smallest value allowed, in seconds.
        min: u32,
    },
}

/// A domain name as configuration gives one: fully qualified, lower case, never empty or the root.
pub fn domain_name(value: &str) -> Result<Name, ConfigError> {
    if value.is_empty() || value == "." {
        return Err(ConfigError::EmptyName);
    }
    let mut name = Name::from_ascii(value).map_err(|source| ConfigError::Name { source })?;
    name.set_fqdn(true);
    Ok(name.to_lowercase())
}

/// `label.<origin>`.
pub(crate) fn prepend(label: &str, origin: &Name) -> Result<Name, ConfigError> {
    Name::from_ascii(label)
        .and_then(|l| l.append_domain(origin))
        .map_err(|source| ConfigError::Prepended {
            name: format!("{label}.{}", text(origin)),
            source,
        })
}

/// A name as users write it: no trailing dot.
pub fn text(name: &Name) -> String {
    name.to_ascii().trim_end_matches('.').to_string()
}

/// A duration in a SOA or TTL field: whole seconds, at least `min`, at most 2^31 - 1 (RFC 2181 section 8
/// for TTLs; BIND and Knot read the SOA timers as signed 32-bit values too).
pub fn seconds(d: Duration, min: u32) -> Result<u32, ConfigError> {
    if d.subsec_nanos() != 0 {
        return Err(ConfigError::Fraction);
    }
    match u32::try_from(d.as_secs()).ok().filter(|&s| s <= i32::MAX as u32) {
        None => Err(ConfigError::TooLong),
        Some(s) if s < min => Err(ConfigError::TooShort { min }),
        Some(s) => Ok(s),
    }
}

/// An apex name server, `NAME[=IP]`: the IP is its glue, served only when the name lies in the zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameServer {
    /// The server's name, fully qualified.
    pub name: Name,
    /// Its address, for the zones it lies in.
    pub glue: Option<IpAddr>,
}

impl FromStr for NameServer {
    type Err = ConfigError;

    fn from_str(value: &str) -> Result<NameServer, ConfigError> {
        let value = value.trim();
        let (host, glue) = match value.split_once('=') {
            Some((host, ip)) => {
                let ip = ip.trim();
                let glue = ip.parse::<IpAddr>().map_err(|source| ConfigError::GlueAddress {
                    ip: ip.to_string(),
                    source,
                })?;
                (host.trim(), Some(glue))
            }
            None => (value, None),
        };
        Ok(NameServer {
            name: domain_name(host)?,
            glue,
        })
    }
}

impl ZoneConfig {
    /// A zone as the `--dns-server-*` flags' defaults make it: `name_server` its one NS (with `glue` when it
    /// lies in the zone), `hostmaster.<zone>`, refresh 1 h, retry 10 min, expire 7 days, negative TTL 30 s,
    /// SOA and NS TTL 60 s. Fails when `hostmaster.<zone>` is not a name (a zone of 253 bytes).
    pub fn new(origin: Name, name_server: Name, glue: Option<IpAddr>) -> Result<ZoneConfig, ConfigError> {
        ZoneConfig::served_by(
            origin,
            &[NameServer {
                name: name_server,
                glue,
            }],
            None,
        )
    }

    /// A zone with the defaults of [`ZoneConfig::new`] whose NS records are `servers` in order (the first is
    /// the SOA's MNAME; `ns1.<zone>` when there is none), each glued to its address when it lies in the zone,
    /// and `rname` the SOA's mailbox (`hostmaster.<zone>` when none is given). Fails when a default it needs
    /// (`ns1.<zone>`, `hostmaster.<zone>`) is not a name.
    pub fn served_by(origin: Name, servers: &[NameServer], rname: Option<Name>) -> Result<ZoneConfig, ConfigError> {
        let default_ns;
        let servers = match servers.first() {
            Some(_) => servers,
            None => {
                default_ns = [NameServer {
                    name: prepend("ns1", &origin)?,
                    glue: None,
                }];
                &default_ns[..]
            }
        };
        Ok(ZoneConfig {
            mname: servers.first().map_or_else(|| origin.clone(), |s| s.name.clone()),
            rname: match rname {
                Some(rname) => rname,
                None => prepend("hostmaster", &origin)?,
            },
            refresh: 3_600,
            retry: 600,
            expire: 604_800,
            minimum: 30,
            ttl: 60,
            name_servers: servers.iter().map(|s| s.name.clone()).collect(),
            glue: servers
                .iter()
                .filter_map(|s| {
                    s.glue
                        .filter(|_| origin.zone_of(&s.name))
                        .map(|ip| (s.name.clone(), ip))
                })
                .collect(),
            dnssec: None,
            origin,
        })
    }
}

impl Secondary {
    /// `ADDR[:PORT][/KEY-NAME]`: an IP address (transfers are allowed by source address; NOTIFY goes to port
    /// 53 unless another is given) and the name of one of `keys`.
    pub fn parse(value: &str, keys: &[TsigKey]) -> Result<Secondary, ConfigError> {
        let value = value.trim();
        let (address, key) = match value.rsplit_once('/') {
            Some((address, key)) => (address.trim(), Some(key.trim())),
            None => (value, None),
        };
        let address = address
            .parse::<SocketAddr>()
            .or_else(|_| {
                address
                    .trim_matches(['[', ']'])
                    .parse::<IpAddr>()
                    .map(|ip| SocketAddr::new(ip, DNS_PORT))
            })
            .map_err(|source| ConfigError::SecondaryAddress {
                address: address.to_string(),
                source,
            })?;
        let key = match key {
            None => None,
            Some(k) => {
                let wanted = k.trim_end_matches('.');
                let Some(known) = keys.iter().find(|known| known.name().eq_ignore_ascii_case(wanted)) else {
                    return Err(ConfigError::UnknownKey { key: k.to_string() });
                };
                Some(domain_name(&known.name())?)
            }
        };
        Ok(Secondary { address, key })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_fully_qualified_lower_case_and_never_empty() {
        let n = domain_name("Home.Example.org").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(n.to_ascii(), "home.example.org.");
        assert!(matches!(domain_name("."), Err(ConfigError::EmptyName)));
        assert!(matches!(domain_name("a..b"), Err(ConfigError::Name { .. })));
    }

    #[test]
    fn a_name_server_may_carry_its_glue() {
        let ns: NameServer = "ns.example.org = 192.0.2.53".parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (text(&ns.name).as_str(), ns.glue),
            ("ns.example.org", "192.0.2.53".parse().ok())
        );
        let e = "ns.example.org=nope".parse::<NameServer>().err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("\"nope\" is not an IP address (want NAME or NAME=IP)")
        );
    }

    #[test]
    fn a_secondary_gets_port_53_unless_given_and_only_a_known_key() {
        let key: TsigKey = "xfr:hmac-sha256:c2VjcmV0".parse().unwrap_or_else(|e| panic!("{e}"));
        let keys = [key];
        let s = Secondary::parse("192.0.2.10", &keys).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((s.address.to_string().as_str(), s.key), ("192.0.2.10:53", None));
        let s = Secondary::parse("[2001:db8::1]:5353/XFR.", &keys).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.address.to_string(), "[2001:db8::1]:5353");
        assert_eq!(s.key.as_ref().map(text).as_deref(), Some("xfr"));
        assert!(matches!(Secondary::parse("[2001:db8::1]", &keys), Ok(s) if s.address.port() == 53));
        assert!(matches!(
            Secondary::parse("192.0.2.1/nokey", &keys),
            Err(ConfigError::UnknownKey { key }) if key == "nokey"
        ));
        assert!(matches!(
            Secondary::parse("ns2.example.org", &keys),
            Err(ConfigError::SecondaryAddress { .. })
        ));
    }

    #[test]
    fn seconds_are_whole_bounded_and_at_least_the_minimum() {
        assert_eq!(seconds(Duration::from_secs(300), 1).ok(), Some(300));
        assert_eq!(seconds(Duration::ZERO, 0).ok(), Some(0));
        assert!(matches!(
            seconds(Duration::ZERO, 1),
            Err(ConfigError::TooShort { min: 1 })
        ));
        assert!(matches!(
            seconds(Duration::from_millis(1500), 1),
            Err(ConfigError::Fraction)
        ));
        let too_long = Duration::from_secs(u64::from(i32::MAX as u32) + 1);
        assert!(matches!(seconds(too_long, 0), Err(ConfigError::TooLong)));
    }

    #[test]
    fn a_zone_gets_ns1_and_hostmaster_when_no_server_is_named() {
        let origin = domain_name("home.example.org").unwrap_or_else(|e| panic!("{e}"));
        let z = ZoneConfig::served_by(origin.clone(), &[], None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text(&z.mname), "ns1.home.example.org");
        assert_eq!(text(&z.rname), "hostmaster.home.example.org");
        let servers: Vec<NameServer> = ["ns.home.example.org=192.0.2.53", "ns.other.net=192.0.2.1"]
            .iter()
            .map(|s| s.parse().unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let z = ZoneConfig::served_by(origin, &servers, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text(&z.mname), "ns.home.example.org");
        assert_eq!(z.name_servers.len(), 2);
        // Glue only for the server inside the zone.
        assert_eq!(
            z.glue.iter().map(|(n, _)| text(n)).collect::<Vec<_>>(),
            ["ns.home.example.org"]
        );
    }
}
