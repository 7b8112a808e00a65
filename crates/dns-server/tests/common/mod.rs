//! What the query and transfer suites share: the server on a free port, the test zone and the spelling of
//! names and endpoints.

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;

use extdns_dns_server::{
    DnsServer, DnsServerProvider, Limits, Secondary, ServerConfig, ServerMetrics, ZoneConfig, Zones,
};
use extdns_dns_wire::TsigKey;
use extdns_endpoint::{Change, Endpoint, RecordType};
use extdns_provider::apply_changes;
use hickory_proto::rr::Name;
use tokio_util::sync::CancellationToken;

/// The built-in server on a free port of 127.0.0.1 with the test zone, filled through its provider as the
/// controller fills it, and the runtime it runs on; stopped when dropped.
pub struct Served {
    pub address: SocketAddr,
    pub provider: DnsServerProvider,
    #[allow(dead_code, reason = "the transfer suite reads the serial; the query suite does not")]
    pub zones: Arc<Zones>,
    #[allow(
        dead_code,
        reason = "the query and transfer suites read the metrics; the dnssec suite does not"
    )]
    pub metrics: ServerMetrics,
    pub runtime: tokio::runtime::Runtime,
    shutdown: CancellationToken,
    /// The DNS-over-TLS address, when the configuration asked for DoT.
    #[allow(dead_code, reason = "the DoT tests read it; the other suites do not")]
    pub tls: Option<SocketAddr>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Served {
    /// The server with these secondaries (NOTIFY and transfers), TSIG keys and limits.
    #[allow(
        dead_code,
        reason = "the query and transfer suites start it so; the internet and dnssec suites by their config"
    )]
    pub fn start(secondaries: Vec<Secondary>, keys: Vec<TsigKey>, limits: Limits) -> Served {
        Served::with(ServerConfig {
            secondaries,
            keys,
            limits,
            ..ServerConfig::new(vec!["127.0.0.1:0".parse().expect("address")], vec![zone_config()])
        })
    }

    /// The server as `config` describes it.
    pub fn with(config: ServerConfig) -> Served {
        let config = Arc::new(config);
        // The clock's seconds, as the binary starts (`zones_and_provider`): serials settle after it.
        let serial = u32::try_from(extdns_dns_wire::unix_now()).expect("a 32-bit clock");
        let zones = Arc::new(Zones::new(&config.zones, serial, config.limits));
        let provider = DnsServerProvider::new(zones.clone(), 60);
        let metrics = ServerMetrics::default();
        let server = DnsServer::bind(config, zones.clone(), metrics.clone()).expect("binds 127.0.0.1:0");
        let address = server.local_addrs()[0];
        let tls = server.local_tls_addrs().first().copied();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let shutdown = CancellationToken::new();
        runtime.spawn(server.run(shutdown.clone()));
        Served {
            address,
            provider,
            zones,
            metrics,
            runtime,
            shutdown,
            tls,
        }
    }

    /// Writes the changes as the controller does, through the provider.
    pub fn apply(&self, changes: &[Change]) {
        self.runtime
            .block_on(apply_changes(&self.provider, changes))
            .expect("the provider applies");
    }

    pub fn port(&self) -> u16 {
        self.address.port()
    }
}

/// A fixed name.
pub fn name(s: &str) -> Name {
    Name::from_str(s).expect("test name")
}

/// `example.org.` as the flags' defaults make it, its NS `ns1.example.org.` glued to 192.0.2.53.
pub fn zone_config() -> ZoneConfig {
    ZoneConfig::new(
        name("example.org."),
        name("ns1.example.org."),
        Some("192.0.2.53".parse().expect("address")),
    )
    .expect("test zone")
}

/// An endpoint as a source writes it.
pub fn ep(dns_name: &str, record_type: RecordType, targets: &[&str]) -> Endpoint {
    Endpoint::new(dns_name, record_type, targets.iter().copied())
}

/// The records of every answer shape the DNSSEC suites ask a validating resolver about, and the query
/// suite's zone starts from: an address set, a CNAME and a CNAME chain, a wildcard, a name under empty
/// non-terminals, and a delegation with its glue.
#[allow(
    dead_code,
    reason = "the DNSSEC suites (BIND's and Unbound's) and the query suite use it; the others do not"
)]
pub fn every_answer_shape() -> [Change; 7] {
    [
        ep("web.example.org", RecordType::A, &["192.0.2.1", "192.0.2.2"]),
        ep("www.example.org", RecordType::Cname, &["web.example.org"]),
        ep("chain.example.org", RecordType::Cname, &["www.example.org"]),
        ep("*.wild.example.org", RecordType::A, &["192.0.2.4"]),
        ep("a.b.c.example.org", RecordType::A, &["192.0.2.3"]),
        ep("sub.example.org", RecordType::Ns, &["ns.sub.example.org"]),
        ep("ns.sub.example.org", RecordType::A, &["192.0.2.6"]),
    ]
    .map(Change::Create)
}

/// An A set (203.0.113.66) to put behind the signer: forged data a validator must call bogus.
#[allow(
    dead_code,
    reason = "the DNSSEC suites (BIND's and Unbound's) use it; the others do not"
)]
pub fn forged_a() -> extdns_dns_server::zones::RrSet {
    use extdns_dns_server::zones::{RrSet, SetOrigin};
    use hickory_proto::rr::RData;
    use hickory_proto::rr::rdata::A;

    RrSet {
        record_type: hickory_proto::rr::RecordType::A,
        ttl: 60,
        data: vec![RData::A(A([203, 0, 113, 66].into()))].into(),
        origin: SetOrigin::Managed { spelt: None },
    }
}
