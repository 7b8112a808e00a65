//! What the server serves and to whom, as typed values: the binary turns `--dns-server-*` flags into a
//! [`ServerConfig`]; nothing here reads a flag.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use extdns_dns_wire::TsigKey;
use hickory_proto::rr::Name;

use crate::cookie::CookieSecret;
use crate::rrl::RrlConfig;
use crate::tls::TlsConfig;

/// The most UDP workers an address takes ([`ServerConfig::udp_workers`]): past the cores of most nodes,
/// more threads only take turns on them.
pub const MAX_UDP_WORKERS: usize = 64;

/// Everything the built-in server needs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Addresses to answer on, UDP and TCP each (`--dns-server-listen`).
    pub listen: Vec<SocketAddr>,
    /// The zones served (`--dns-server-zone`, repeatable).
    pub zones: Vec<ZoneConfig>,
    /// TTL of records whose endpoint sets none (`--dns-server-ttl`).
    pub default_ttl: u32,
    /// Who may transfer the zones and is sent NOTIFY on every change.
    pub secondaries: Vec<Secondary>,
    /// TSIG keys the server knows (`--dns-server-tsig-key`), by name.
    pub keys: Vec<TsigKey>,
    /// Limits that keep what a client can make the server hold bounded.
    pub limits: Limits,
    /// Response rate limiting of UDP answers; `None`: off.
    pub rrl: Option<RrlConfig>,
    /// Answer DNS cookies (RFC 7873, `--dns-server-cookies`).
    pub cookies: bool,
    /// The secret server cookies are made with, shared by the replicas (`--dns-server-cookie-secret`);
    /// `None`: one drawn for the process at bind.
    pub cookie_secret: Option<CookieSecret>,
    /// DNS over TLS; `None`: off.
    pub tls: Option<TlsConfig>,
    /// UDP workers per listen address (`--dns-server-udp-workers`); 0: one per CPU the process may use,
    /// at most 8.
    pub udp_workers: usize,
    /// Run by each UDP worker thread as it starts, before its first datagram: what the binary sets up
    /// per answering thread (its allocator's thread cache: the process turns them off to hold less, and
    /// a worker allocates for every answer; docs/performance.md).
    pub on_udp_worker_start: Option<fn()>,
}

impl ServerConfig {
    /// A server of `zones` on `listen` as the `--dns-server-*` flags' defaults make it: TTL 60 s where an
    /// endpoint sets none, no secondaries, no TSIG keys, the default limits, cookies with a secret of the
    /// process's own, no rate limiting (the flags turn it on beyond loopback), no DoT. Set the fields to differ.
    pub fn new(listen: Vec<SocketAddr>, zones: Vec<ZoneConfig>) -> ServerConfig {
        ServerConfig {
            listen,
            zones,
            default_ttl: 60,
            secondaries: Vec::new(),
            keys: Vec::new(),
            limits: Limits::default(),
            rrl: None,
            cookies: true,
            cookie_secret: None,
            tls: None,
            udp_workers: 0,
            on_udp_worker_start: None,
        }
    }
}

/// One zone's fixed parts: SOA timers and the apex NS records with their glue.
#[derive(Debug, Clone)]
pub struct ZoneConfig {
    /// The zone's apex, fully qualified.
    pub origin: Name,
    /// The SOA record's MNAME: the first NS name by default.
    pub mname: Name,
    /// The SOA record's RNAME (`hostmaster.<zone>` by default).
    pub rname: Name,
    /// SOA refresh, retry, expire and minimum (the negative-caching TTL), in seconds.
    pub refresh: u32,
    /// See [`ZoneConfig::refresh`].
    pub retry: u32,
    /// See [`ZoneConfig::refresh`].
    pub expire: u32,
    /// See [`ZoneConfig::refresh`].
    pub minimum: u32,
    /// TTL of the SOA and apex NS records.
    pub ttl: u32,
    /// The apex NS names (`--dns-server-ns`); at least one.
    pub name_servers: Vec<Name>,
    /// Addresses of in-zone name servers (glue), served as their A/AAAA records.
    pub glue: Vec<(Name, IpAddr)>,
    /// Signed with this key when set (`--dns-server-dnssec-zone`); unsigned by default.
    pub dnssec: Option<crate::dnssec::DnssecConfig>,
}

/// A secondary allowed to transfer (`--dns-server-secondary`): its address, and the key it must sign with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secondary {
    /// Where NOTIFY goes, and the source address a transfer must come from (the port is ignored there).
    pub address: SocketAddr,
    /// The name of a key of [`ServerConfig::keys`] the secondary's transfers must be signed with; NOTIFY to it
    /// is signed with it too. `None`: address alone decides.
    pub key: Option<Name>,
}

/// Bounds on what clients can make the server hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// TCP connections served at once; more wait in the kernel's backlog.
    pub tcp_connections: usize,
    /// A TCP connection idle this long is closed (RFC 7766 recommends seconds, not minutes).
    pub tcp_idle: Duration,
    /// Changes kept per zone for IXFR; older serials get a full transfer.
    pub journal_changes: usize,
    /// The span of clock a zone's serial settles on: once the span in which its content last changed
    /// is over, the serial becomes one derived from that span and the content alone, the same on every
    /// replica, and only such serials are sent in NOTIFY and answered by IXFR diffs ([`crate::zones`]).
    /// `None`: each write's serial is final, NOTIFY follows every write at once, and secondaries must
    /// follow one replica.
    pub serial_cell: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            tcp_connections: 256,
            tcp_idle: Duration::from_secs(10),
            journal_changes: 1_000,
            serial_cell: Some(Duration::from_secs(10)),
        }
    }
}
