//! The BIND server each scenario writes to (the same launcher as the RFC2136 integration tests) and what the
//! scenarios read from it: answers to queries, and the zone by AXFR (TTLs included).

use std::collections::BTreeSet;

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

/// A difference extdns makes on purpose: what it is (as docs/migration.md says) and the records it covers.
pub struct Documented {
    what: &'static str,
    covers: fn(&Record) -> bool,
}

/// extdns's deliberate differences that show in these zones.
pub const DOCUMENTED: &[Documented] = &[];

/// Fails unless external-dns's zone (`theirs`) and extdns's (`ours`) hold the same records but for the
/// [`DOCUMENTED`] differences; `with` says what the run did, for the message.
pub fn same_zones(theirs: &DnsServer, ours: &DnsServer, with: &str) -> Result<()> {
    let undocumented = differences(&zone(theirs)?, &zone(ours)?);
    if !undocumented.is_empty() {
        anyhow::bail!(
            "the zones differ {with} (- external-dns, + extdns):\n{}",
            undocumented.join("\n")
        );
    }
    Ok(())
}

/// The records one zone has and the other has not (`- ` theirs only, `+ ` ours only), but for
/// [`DOCUMENTED`] differences, which are printed and not returned: what fails a comparison of external-dns's
/// zone with extdns's, or of a zone before and after a run that must not change it.
pub fn differences(theirs: &[Record], ours: &[Record]) -> Vec<String> {
    let a: BTreeSet<&Record> = theirs.iter().collect();
    let b: BTreeSet<&Record> = ours.iter().collect();
    let documented = |r: &Record| DOCUMENTED.iter().find(|d| (d.covers)(r));
    let mut out = Vec::new();
    for r in a.difference(&b) {
        match documented(r) {
            Some(d) => eprintln!("  documented difference ({}): - {r}", d.what),
            None => out.push(format!("- {r}")),
        }
    }
    for r in b.difference(&a) {
        match documented(r) {
            Some(d) => eprintln!("  documented difference ({}): + {r}", d.what),
            None => out.push(format!("+ {r}")),
        }
    }
    out
}
