//! What the query and transfer suites share: the test zone and the spelling of names and endpoints.

use std::str::FromStr;

use extdns_dns_server::ZoneConfig;
use extdns_endpoint::{Endpoint, RecordType};
use hickory_proto::rr::Name;

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
