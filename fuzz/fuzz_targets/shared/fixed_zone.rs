//! The zone the query-path fuzz targets answer from, filled through the provider as the controller fills
//! it, with every answer shape: data, a CNAME chain and loop, a wildcard, an empty non-terminal, a
//! delegation with glue, an MX with an in-zone target, and a record set too big for UDP.

use std::str::FromStr;
use std::sync::Arc;

use extdns_dns_server::server::fuzzing::QueryPath;
use extdns_dns_server::{DnsServerProvider, ServerConfig, ZoneConfig, Zones};
use extdns_endpoint::{Change, Endpoint, RecordType};
use hickory_proto::rr::Name;

fn name(s: &str) -> Name {
    Name::from_str(s).expect("fixed name")
}

/// `example.org.` with its NS `ns1.example.org.` glued to 192.0.2.53, as the flags' defaults make it.
pub fn example_org() -> ZoneConfig {
    ZoneConfig::new(
        name("example.org."),
        name("ns1.example.org."),
        Some("192.0.2.53".parse().expect("fixed address")),
    )
    .expect("fixed zone")
}

/// The query path of a server of `zone` holding every answer shape.
pub fn query_path(zone: ZoneConfig) -> QueryPath {
    let config = Arc::new(ServerConfig::new(Vec::new(), vec![zone]));
    let zones = Arc::new(Zones::new(&config.zones, 1, config.limits));
    let provider = DnsServerProvider::new(zones.clone(), 60);
    let many: Vec<String> = (0..120).map(|i| format!("10.0.0.{i}")).collect();
    let endpoints = [
        Endpoint::new("web.example.org", RecordType::A, ["192.0.2.1", "192.0.2.2"]),
        Endpoint::new("www.example.org", RecordType::Cname, ["web.example.org"]),
        Endpoint::new("loop.example.org", RecordType::Cname, ["loop.example.org"]),
        Endpoint::new("a.b.c.example.org", RecordType::Aaaa, ["2001:db8::1"]),
        Endpoint::new("*.wild.example.org", RecordType::Txt, ["\"wild\""]),
        Endpoint::new("sub.example.org", RecordType::Ns, ["ns.sub.example.org"]),
        Endpoint::new("ns.sub.example.org", RecordType::A, ["192.0.2.6"]),
        Endpoint::new("mail.example.org", RecordType::Mx, ["10 web.example.org"]),
        Endpoint::new("big.example.org", RecordType::A, many),
    ];
    let changes: Vec<Change> = endpoints.into_iter().map(Change::Create).collect();
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    runtime
        .block_on(extdns_provider::apply_changes(&provider, &changes))
        .expect("the fixed zone applies");
    QueryPath::new(zones, config)
}
