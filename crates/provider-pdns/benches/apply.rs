//! Throughput of the PowerDNS provider against a real PowerDNS 4.7 (sqlite3 backend) on 127.0.0.1: 10,000
//! record changes, each an A record with its ownership TXT record as the TXT registry sends them (so 20,000
//! rrsets), created, read back, then deleted, with 1, 100 and 1,000 (the default) changes a PATCH, in
//! records per second. Each batch size gets a fresh server.
//!
//! Run: `cargo bench -p extdns-provider-pdns --bench apply` (needs `apt-get install -y pdns-server
//! pdns-backend-sqlite3 sqlite3`). Set `PDNS_BENCH_RECORDS` to change the number of records.

use std::time::Duration;

use extdns_endpoint::{Change, Endpoint, RecordType};
use extdns_provider::{ReadState, Unit};
use extdns_provider_pdns::{PdnsConfig, PdnsProvider};
use extdns_test_support::bench::{self, Round};
use extdns_test_support::pdns::{API_KEY, PowerDns, Zone};

fn main() {
    let n = bench::records_from_env("PDNS_BENCH_RECORDS");
    let runtime = bench::runtime();
    let title =
        format!("pdns provider → PowerDNS 4.7 gsqlite3 on 127.0.0.1, {n} A records + {n} ownership TXT records");
    bench::print_header(&title, &format!("{:>10} {:>10}", "batch", "PATCHes"));
    for batch in [1usize, 100, 1000] {
        // Batch size 1 is one PATCH (one database transaction) per record: a tenth of the records is
        // enough to show its rate.
        let n = if batch == 1 { n / 10 } else { n };
        let pdns = PowerDns::start(&[Zone::new("bench.example")]);
        let mut config = PdnsConfig::new(pdns.url(), API_KEY);
        config.batch_change_size = batch * 2;
        config.calls.timeout = Duration::from_secs(120);
        let provider = PdnsProvider::new(&config).unwrap_or_else(|e| panic!("{e}"));
        let creates: Vec<(Change, Change)> = (0..n)
            .map(|i| {
                let record = bench::a_record(i, "bench.example");
                let name = &record.dns_name;
                let owner = Endpoint::new(
                    &format!("a-{name}"),
                    RecordType::Txt,
                    ["\"heritage=external-dns,external-dns/owner=bench\""],
                );
                (Change::Create(record), Change::Create(owner))
            })
            .collect();
        let units: Vec<Unit<'_>> = creates.iter().map(|(r, o)| Unit::with_ownership(r, o)).collect();
        let round = runtime.block_on(async {
            let create = bench::timed_apply(&provider, &ReadState::default(), &units, "create").await;
            let ours = |e: &Endpoint| e.dns_name.starts_with('r');
            let (read, delete) = bench::read_then_delete(&provider, n, ours, ownership_delete).await;
            Round { create, read, delete }
        });
        // Creates and deletes, none refused: no PATCH is split.
        let patches = n.div_ceil(batch) * 2;
        println!("{batch:>10} {patches:>10} {round:.3}");
        assert!(pdns.dig("r0.bench.example", "A").is_empty(), "deleted");
        assert!(pdns.dig("a-r0.bench.example", "TXT").is_empty(), "deleted");
    }
}

/// The delete of a record's ownership TXT record, to travel with the record's own as the registry pairs them.
fn ownership_delete(record: &Endpoint) -> Option<Change> {
    let name = format!("a-{}", record.dns_name);
    Some(Change::Delete(Endpoint::new(&name, RecordType::Txt, ["\"x\""])))
}
