//! The BIND server each scenario writes to (the same launcher as the RFC2136 integration tests) and what the
//! scenarios read from it: answers to queries, and the zone by AXFR (TTLs included).

use anyhow::Result;
use extdns_test_support::dig;

pub use extdns_test_support::dig::{Record, owned_txt, query_a, query_a_count, records_of};
pub use extdns_test_support::dns_server::{DnsServer, KEY_NAME, Kind, SECRET, Zone};
pub use extdns_test_support::need;

pub const ZONE: &str = "example.org";

/// BIND primary for [`ZONE`], updates and transfers with the test TSIG key.
pub fn bind() -> DnsServer {
    DnsServer::start(Kind::Bind, &[Zone::new(ZONE)])
}

/// [`ZONE`] by AXFR, sorted, without the SOA (its serial counts changes, not content).
pub fn zone(server: &DnsServer) -> Result<Vec<Record>> {
    server.axfr(ZONE)
}

/// A zone of the BIND server on `port` by AXFR, as [`zone`] (for threads, which get the port rather than the
/// server).
pub fn zone_on(port: u16, zone: &str) -> Result<Vec<Record>> {
    dig::axfr(port, zone)
}

/// Sorted answers of `name TYPE` (`dig +short` form).
pub fn answers(server: &DnsServer, name: &str, rtype: &str) -> Vec<String> {
    server.dig(name, rtype)
}
